# SPDX-License-Identifier: GPL-2.0
#
# kvarenactl: the operator's tool.
#
#   $(B)/tools/kvarenactl          the tool (installed)
#   $(B)/tools/kvarenactl-san      the same under ASan/UBSan, for the tests
#   $(B)/tools/kvarenactl-static   statically linked, for the test VM; it
#                                  cannot load libcuda.so.1

KVACTL_SRCS := $(addprefix $(SRC)/tools/kvarenactl/,main.c cmdline.c dev.c fmt.c \
		view.c metrics.c create.c holders.c cuda.c ids.c events.c msgpack.c \
		zmq.c scrub.c resize.c tier.c gang.c cgroup.c exporter.c apply.c remote.c) \
		$(SRC)/tools/common/fileio.c
KVACTL_DEPS := $(KVACTL_SRCS) $(SRC)/tools/kvarenactl/kvarenactl.h \
	       $(SRC)/include/kvarena/remote.h $(KVT_REMOTE_SRCS) $(KVT_REMOTE_HDRS) \
	       $(SRC)/tools/common/fileio.h \
	       $(SRC)/tools/kvarenactl/events.h \
	       $(SRC)/include/uapi/linux/kvarena.h \
	       $(SRC)/include/kvarena/layout.h

# events --zmq needs libzmq (Debian's libzmq3-dev); without it kvarenactl
# is built all the same and --zmq says what is missing.  The static build
# for the VM never has it.
KVACTL_ZMQ := $(shell pkg-config --exists libzmq 2>/dev/null && echo y)
KVACTL_OPT_CFLAGS := $(if $(KVACTL_ZMQ),-DKVACTL_ZMQ $(shell pkg-config --cflags libzmq))
KVACTL_OPT_LIBS := $(if $(KVACTL_ZMQ),$(shell pkg-config --libs libzmq))

# exporter serves HTTP with libmicrohttpd (Debian's libmicrohttpd-dev);
# without it, and in the static build, the command says what is missing.
KVACTL_MHD := $(shell pkg-config --exists libmicrohttpd 2>/dev/null && echo y)
KVACTL_OPT_CFLAGS += $(if $(KVACTL_MHD),-DKVACTL_MHD $(shell pkg-config --cflags libmicrohttpd))
KVACTL_OPT_LIBS += $(if $(KVACTL_MHD),$(shell pkg-config --libs libmicrohttpd) -lpthread)

# remote talks to Redis with hiredis (Debian's libhiredis-dev), through
# tools/common's cluster client; without it, and in the static build, the
# command says what is missing.
KVACTL_OPT_CFLAGS += $(if $(KVT_HIREDIS),-DKVACTL_REMOTE -I$(SRC)/lib/src)
KVACTL_OPT_SRCS := $(if $(KVT_HIREDIS),$(KVT_REMOTE_SRCS))
KVACTL_OPT_LIBS += $(KVT_REMOTE_LIBS)

# agent reads and writes a file arena's frames on an io_uring where
# liburing is (as libkvarena finds it: Debian's liburing-dev, with its
# static library for the static build), else with pread and pwrite.
KVACTL_URING_CFLAGS := -I$(SRC)/tools/common $(if $(LIBKVA_HAVE_URING),-DKVT_URING)
KVACTL_URING_LIBS := $(if $(LIBKVA_HAVE_URING),-luring)

# scrub runs libkvarena's kva_scrub(): the dynamic builds link the static
# library (and, with it, liburing).
$(B)/tools/kvarenactl: $(KVACTL_DEPS) $(LIBKVA_A)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) $(KVACTL_URING_CFLAGS) \
		$(KVACTL_OPT_CFLAGS) -o $@ $(KVACTL_SRCS) $(KVACTL_OPT_SRCS) $(LIBKVA_A) \
		$(LIBKVA_LDLIBS) $(KVACTL_OPT_LIBS)

$(B)/tools/kvarenactl-san: $(KVACTL_DEPS) $(LIBKVA_A)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) $(SAN_FLAGS) $(KVACTL_URING_CFLAGS) \
		$(KVACTL_OPT_CFLAGS) -o $@ $(KVACTL_SRCS) $(KVACTL_OPT_SRCS) $(LIBKVA_A) \
		$(LIBKVA_LDLIBS) $(KVACTL_OPT_LIBS)

$(B)/tools/kvarenactl-static: $(KVACTL_DEPS)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) $(KVACTL_URING_CFLAGS) \
		-DKVACTL_STATIC -static -o $@ $(KVACTL_SRCS) $(KVACTL_URING_LIBS)

.PHONY: install-kvarenactl
install-kvarenactl: $(B)/tools/kvarenactl
	$(Q)install -d $(DESTDIR)$(BINDIR)
	$(Q)install -m 755 $(B)/tools/kvarenactl $(DESTDIR)$(BINDIR)/kvarenactl

ALL             += $(B)/tools/kvarenactl
INSTALL_TARGETS += install-kvarenactl
INSTALL_FILES   += $(BINDIR)/kvarenactl
