# SPDX-License-Identifier: GPL-2.0
#
# Documentation/*.rst must be valid reStructuredText: docutils halts on
# any warning.

RST2HTML ?= $(firstword $(shell which rst2html rst2html.py 2>/dev/null))

.PHONY: check-docs
check-docs:
	@test -n "$(RST2HTML)" || { echo "check-docs: rst2html not found (apt-get install python3-docutils)" >&2; exit 1; }
	$(Q)for f in $(SRC)/Documentation/*.rst; do \
		$(RST2HTML) --halt=2 --report=2 $$f >/dev/null || exit 1; done
	@echo "  DOCS    Documentation/*.rst"

CHECK_NATIVE += check-docs
