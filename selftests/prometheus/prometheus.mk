# SPDX-License-Identifier: GPL-2.0
#
# check-prometheus (native): what dist/ gives Prometheus and Grafana users,
# read by Prometheus's own promtool (Debian's prometheus package):
#   - the alerting rules parse (promtool check rules), fire, and stay
#     quiet, where their unit tests say (promtool test rules), and name
#     only metrics that kvarenactl serves;
#   - every expression of the example dashboard parses as PromQL and names
#     only metrics that kvarenactl serves (the names are taken from the
#     tool's source, the tables that print them).
# The exporter itself is tested in the VM (selftests/python/
# test_exporter.py: promtool check metrics, a real prometheus scraping it).

PROM_T := $(B)/selftests/prometheus
PROMTOOL ?= promtool
# kvarena_* names in metrics.c and exporter.c: what kvarenactl can serve.
PROM_SERVED = $(shell grep -oh '"kvarena_[a-z_]*' $(SRC)/tools/kvarenactl/metrics.c \
		$(SRC)/tools/kvarenactl/exporter.c | tr -d '"' | sort -u)

.PHONY: check-prometheus
check-prometheus:
	@command -v $(PROMTOOL) >/dev/null || { echo "check-prometheus: no promtool (apt-get install prometheus; .ci/deps does)" >&2; exit 1; }
	$(Q)mkdir -p $(PROM_T)
	$(Q)cd $(SRC)/dist/prometheus && $(PROMTOOL) check rules kvarena-alerts.yml
	$(Q)cd $(SRC)/dist/prometheus && $(PROMTOOL) test rules kvarena-alerts.test.yml
	$(Q)for n in $$(grep -oh 'kvarena_[a-z_]*' $(SRC)/dist/prometheus/kvarena-alerts.yml | sort -u); do \
		case " $(PROM_SERVED) " in *" $$n "*) ;; \
		*) echo "check-prometheus: kvarena-alerts.yml: $$n is not a metric kvarenactl serves" >&2; exit 1 ;; esac; \
	done
	$(Q)$(PYTHON) $(SRC)/selftests/prometheus/check_dashboard.py \
		$(SRC)/dist/grafana/kvarena-dashboard.json $(PROM_T)/dashboard-rules.yml \
		$(PROM_SERVED)
	$(Q)$(PROMTOOL) check rules $(PROM_T)/dashboard-rules.yml
	@echo "check-prometheus: ok"

CHECK_NATIVE += check-prometheus
