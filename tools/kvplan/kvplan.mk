# SPDX-License-Identifier: GPL-2.0
#
# kvplan: the KV-cache capacity planner.
#
#   $(B)/tools/kvplan        the tool
#   $(B)/tools/kvplan-san    the same under ASan/UBSan, for check-kvplan
#   $(B)/tools/kvplan-static statically linked, for the documented examples
#                            run in the test VM (selftests/docs)

KVPLAN_SRCS := $(addprefix $(SRC)/tools/kvplan/,main.c plan.c waste.c gpu.c) \
	       $(KVT_COMMON_SRCS)
KVPLAN_DEPS := $(KVPLAN_SRCS) $(SRC)/tools/kvplan/kvplan.h \
	       $(KVT_COMMON_HDRS)

$(B)/tools/kvplan: $(KVPLAN_DEPS)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) $(KVT_COMMON_CFLAGS) -o $@ $(KVPLAN_SRCS)

$(B)/tools/kvplan-san: $(KVPLAN_DEPS)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) $(KVT_COMMON_CFLAGS) $(SAN_FLAGS) \
		-o $@ $(KVPLAN_SRCS)

$(B)/tools/kvplan-static: $(KVPLAN_DEPS)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) $(KVT_COMMON_CFLAGS) -static -o $@ \
		$(KVPLAN_SRCS)

.PHONY: install-kvplan
install-kvplan: $(B)/tools/kvplan
	$(Q)install -d $(DESTDIR)$(BINDIR)
	$(Q)install -m 755 $(B)/tools/kvplan $(DESTDIR)$(BINDIR)/kvplan

ALL             += $(B)/tools/kvplan
INSTALL_TARGETS += install-kvplan
INSTALL_FILES   += $(BINDIR)/kvplan
