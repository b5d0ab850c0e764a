# SPDX-License-Identifier: GPL-2.0
#
# libkvarena: the userspace runtime.
#
#   $(B)/lib/libkvarena.a            static library
#   $(B)/lib/libkvarena.so.1.0.0     shared library (+ .so.1, .so links)
#   $(B)/lib/kvarena.pc              pkg-config file
#   make install-lib                 headers, libraries, kvarena.pc under
#                                    $(DESTDIR)$(PREFIX) (LIBDIR, INCLUDEDIR)
#
# The embedded arena is the module's own core allocator, compiled in from
# $(SRC)/driver/core.c.  The CUDA backend is compiled against
# $(CUDA_HOME)/include/cuda.h but never linked to libcuda: it loads the
# driver with dlopen() at run time.  Without a CUDA toolkit, cuda_none.c
# stands in and CUDA arenas report -EOPNOTSUPP.
#
# Other parts link with $(LIBKVA_A) $(LIBKVA_LDLIBS), or against the
# shared library with -L$(B)/lib -lkvarena.

LIBKVA_VERSION := 1.0.0
LIBKVA_SONAME  := libkvarena.so.1
LIBDIR         ?= $(PREFIX)/lib
INCLUDEDIR     ?= $(PREFIX)/include

LIBKVA_A   := $(B)/lib/libkvarena.a
LIBKVA_SO  := $(B)/lib/libkvarena.so.$(LIBKVA_VERSION)
LIBKVA_PC  := $(B)/lib/kvarena.pc
# liburing is optional: without it (a bare GPU machine) the device
# provider speaks ioctl only (KVA_NO_URING).
LIBKVA_HAVE_URING := $(shell printf '\043include <liburing.h>\n' | \
		       $(CC) -E -x c - >/dev/null 2>&1 && echo y)
LIBKVA_LDLIBS := $(if $(LIBKVA_HAVE_URING),-luring) -ldl -lpthread

LIBKVA_HAVE_CUDA := $(wildcard $(CUDA_HOME)/include/cuda.h)
LIBKVA_CUDA_SRCS := $(if $(LIBKVA_HAVE_CUDA),cuda.c cuda_load.c,cuda_none.c)
LIBKVA_CUDA_CFLAGS := $(if $(LIBKVA_HAVE_CUDA),-I$(CUDA_HOME)/include)

LIBKVA_SRCS := $(addprefix $(SRC)/lib/src/,arena.c device.c embedded.c \
		geometry.c host.c prefix.c scrub.c seq.c sha256.c teardown.c tier.c track.c usage.c \
		$(LIBKVA_CUDA_SRCS)) \
		$(SRC)/driver/core.c
LIBKVA_HDRS := $(SRC)/lib/include/kvarena.h $(wildcard $(SRC)/lib/src/*.h) \
	       $(SRC)/include/kvarena/layout.h $(SRC)/include/kvarena/remote.h \
	       $(SRC)/include/uapi/linux/kvarena.h \
	       $(SRC)/driver/core.h $(SRC)/driver/core_shim.h
LIBKVA_CFLAGS = $(KVA_CFLAGS) -I$(SRC)/driver -I$(SRC)/lib/src \
		$(LIBKVA_CUDA_CFLAGS) $(if $(LIBKVA_HAVE_URING),,-DKVA_NO_URING) \
		-pthread

# One object directory per flavour: the shipped one, and the test build
# (KVA_TESTING: fault-injection and pass-count sites), plain and under the
# sanitizers.
LIBKVA_OBJS      := $(patsubst %.c,$(B)/lib/obj/%.o,$(notdir $(LIBKVA_SRCS)))
LIBKVA_TEST_OBJS := $(patsubst %.c,$(B)/lib/test-obj/%.o,$(notdir $(LIBKVA_SRCS)))
LIBKVA_SAN_OBJS  := $(patsubst %.c,$(B)/lib/san-obj/%.o,$(notdir $(LIBKVA_SRCS)))

# The same three rules for lib/src/*.c and for the core allocator.
define LIBKVA_OBJ_RULES
$(B)/lib/obj/%.o: $(1)/%.c $$(LIBKVA_HDRS)
	@mkdir -p $$(@D)
	$$(Q)$$(CC) $$(CFLAGS) $$(LIBKVA_CFLAGS) -fPIC -c -o $$@ $$<

$(B)/lib/test-obj/%.o: $(1)/%.c $$(LIBKVA_HDRS)
	@mkdir -p $$(@D)
	$$(Q)$$(CC) $$(CFLAGS) $$(LIBKVA_CFLAGS) -DKVA_TESTING -c -o $$@ $$<

$(B)/lib/san-obj/%.o: $(1)/%.c $$(LIBKVA_HDRS)
	@mkdir -p $$(@D)
	$$(Q)$$(CC) -O1 -g $$(SAN_FLAGS) $$(LIBKVA_CFLAGS) -DKVA_TESTING -c -o $$@ $$<
endef
$(eval $(call LIBKVA_OBJ_RULES,$(SRC)/lib/src))
$(eval $(call LIBKVA_OBJ_RULES,$(SRC)/driver))

$(LIBKVA_A): $(LIBKVA_OBJS)
	$(Q)rm -f $@
	$(Q)$(AR) rcs $@ $^

$(LIBKVA_SO): $(LIBKVA_OBJS) $(SRC)/lib/libkvarena.map
	$(Q)$(CC) $(CFLAGS) -shared -Wl,-soname,$(LIBKVA_SONAME) \
		-Wl,--version-script=$(SRC)/lib/libkvarena.map -Wl,-z,defs \
		-o $@ $(LIBKVA_OBJS) $(LIBKVA_LDLIBS)
	$(Q)ln -sf $(notdir $@) $(B)/lib/$(LIBKVA_SONAME)
	$(Q)ln -sf $(LIBKVA_SONAME) $(B)/lib/libkvarena.so

# Rebuilt when PREFIX, LIBDIR or INCLUDEDIR change.
$(B)/lib/.pc-vars: FORCE
	@mkdir -p $(@D)
	@echo '$(PREFIX) $(LIBDIR) $(INCLUDEDIR) $(LIBKVA_VERSION)' | \
		cmp -s - $@ 2>/dev/null || \
		echo '$(PREFIX) $(LIBDIR) $(INCLUDEDIR) $(LIBKVA_VERSION)' > $@

$(LIBKVA_PC): $(SRC)/lib/kvarena.pc.in $(B)/lib/.pc-vars
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		-e 's|@VERSION@|$(LIBKVA_VERSION)|' $< > $@

.PHONY: install-lib FORCE
FORCE:

# The uapi header goes under kvarena/uapi/ (the .pc file's Cflags put it on
# the include path as <linux/kvarena.h>), not into $(INCLUDEDIR)/linux/,
# which belongs to the C library's kernel headers.
install-lib: $(LIBKVA_A) $(LIBKVA_SO) $(LIBKVA_PC)
	$(Q)install -d $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(INCLUDEDIR)/kvarena/uapi/linux
	$(Q)install -m 644 $(SRC)/lib/include/kvarena.h $(DESTDIR)$(INCLUDEDIR)/
	$(Q)install -m 644 $(SRC)/include/kvarena/layout.h \
		$(SRC)/include/kvarena/remote.h $(DESTDIR)$(INCLUDEDIR)/kvarena/
	$(Q)install -m 644 $(SRC)/include/uapi/linux/kvarena.h \
		$(DESTDIR)$(INCLUDEDIR)/kvarena/uapi/linux/
	$(Q)install -m 644 $(LIBKVA_A) $(DESTDIR)$(LIBDIR)/
	$(Q)install -m 755 $(LIBKVA_SO) $(DESTDIR)$(LIBDIR)/
	$(Q)ln -sf $(notdir $(LIBKVA_SO)) $(DESTDIR)$(LIBDIR)/$(LIBKVA_SONAME)
	$(Q)ln -sf $(LIBKVA_SONAME) $(DESTDIR)$(LIBDIR)/libkvarena.so
	$(Q)install -m 644 $(LIBKVA_PC) $(DESTDIR)$(LIBDIR)/pkgconfig/

ALL             += $(LIBKVA_A) $(LIBKVA_SO) $(LIBKVA_PC)
INSTALL_TARGETS += install-lib
INSTALL_FILES   += $(INCLUDEDIR)/kvarena.h $(INCLUDEDIR)/kvarena/layout.h \
		   $(INCLUDEDIR)/kvarena/remote.h \
		   $(INCLUDEDIR)/kvarena/uapi/linux/kvarena.h \
		   $(LIBDIR)/libkvarena.a $(LIBDIR)/$(notdir $(LIBKVA_SO)) \
		   $(LIBDIR)/$(LIBKVA_SONAME) $(LIBDIR)/libkvarena.so \
		   $(LIBDIR)/pkgconfig/kvarena.pc
