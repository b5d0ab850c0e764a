# SPDX-License-Identifier: GPL-2.0
#
# kvsim: the trace-driven simulator of a serving engine's KV memory.  The
# kvarena policy runs on the module's own core allocator (driver/core.c).
#
#   $(B)/tools/kvsim        the tool
#   $(B)/tools/kvsim-san    the same under ASan/UBSan, for the tests

KVSIM_SRCS := $(addprefix $(SRC)/tools/kvsim/,main.c sim.c tokens.c \
		blocks.c arena.c keys.c report.c tier.c cost.c) $(KVT_SVG_SRCS) \
	      $(KVT_COMMON_SRCS) $(SRC)/driver/core.c
KVSIM_DEPS := $(KVSIM_SRCS) $(SRC)/tools/kvsim/kvsim.h $(KVT_COMMON_HDRS) \
	      $(KVT_SVG_HDRS) \
	      $(SRC)/driver/core.h $(SRC)/driver/core_shim.h
KVSIM_CFLAGS = $(KVA_CFLAGS) $(KVT_COMMON_CFLAGS) -I$(SRC)/driver

$(B)/tools/kvsim: $(KVSIM_DEPS)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVSIM_CFLAGS) -o $@ $(KVSIM_SRCS) -lm

$(B)/tools/kvsim-san: $(KVSIM_DEPS)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O1 -g $(KVSIM_CFLAGS) $(SAN_FLAGS) -o $@ $(KVSIM_SRCS) -lm

.PHONY: install-kvsim
install-kvsim: $(B)/tools/kvsim
	$(Q)install -d $(DESTDIR)$(BINDIR)
	$(Q)install -m 755 $(B)/tools/kvsim $(DESTDIR)$(BINDIR)/kvsim

ALL             += $(B)/tools/kvsim
INSTALL_TARGETS += install-kvsim
INSTALL_FILES   += $(BINDIR)/kvsim
