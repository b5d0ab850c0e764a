# SPDX-License-Identifier: GPL-2.0
#
# kvarena top-level Makefile.
#
#   make              module, libkvarena, kernels and tools
#   make check        native tests, then the VM tests (module in qemu)
#   make run          the main job: boot the VM, create an arena, serve
#                     trace slices with three kvserve processes, kill one
#                     mid-flight; results and run.svg in build/run/
#   make check-run    the main job as it is, on one CPU, beside a CPU hog
#   make install      libkvarena, headers, tools, man pages, the Python
#                     package, the udev rule (PREFIX, DESTDIR); make
#                     uninstall removes them (mk/install.mk)
#   make modules_install, make install-dkms   the module (mk/install.mk)
#
# Userspace output goes to $(B) (build/ by default).  The module is built
# per kernel release in $(B)/kmod/<release>/ so that several kernels can be
# built from one tree.  Parts of the tree add themselves through their own
# *.mk fragment; each appends to ALL, CHECK_NATIVE and INSTALL_TARGETS.

B        ?= build
PREFIX   ?= /usr/local
DESTDIR  ?=
CC       ?= cc
CUDA_HOME ?= /usr/local/cuda
NVCC     ?= $(wildcard $(CUDA_HOME)/bin/nvcc)

SRC      := $(CURDIR)
Q        := $(if $(V),,@)

CFLAGS   ?= -O2 -g
KVA_CFLAGS := -std=gnu11 -Wall -Wextra -Wshadow -Wno-unused-parameter \
	      -D_GNU_SOURCE -fno-strict-aliasing \
	      -I$(SRC)/include -I$(SRC)/include/uapi -I$(SRC)/lib/include
# The kselftest harness compares mixed signedness in its macros.
KSFT_CFLAGS := -Wno-sign-compare
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
	     -fno-sanitize-recover=all

ALL             :=
CHECK_NATIVE    :=
CHECK_BUILD     :=
INSTALL_TARGETS :=

.PHONY: all check check-build check-native check-vm run check-run check-run-short \
	install uninstall clean \
	module module-all-kernels
.DEFAULT_GOAL := all

include mk/kselftest.mk
include mk/kmod.mk
include mk/install.mk
include mk/docs.mk
include mk/deb.mk
-include $(sort $(wildcard driver/*.mk lib/*.mk kernels/*.mk tools/*/*.mk \
			   selftests/*/*.mk))

all: module $(ALL)

# make check: everything the tests need built first, CHECK_JOBS at once
# (the machine's CPUs by default), then the native tests, side by side
# too (each one's output printed whole when it ends), then the VM tests,
# one boot at a time: a VM beside a build starves.
CHECK_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
check:
	$(Q)$(MAKE) --no-print-directory -j$(CHECK_JOBS) check-build
	$(Q)$(MAKE) --no-print-directory check-native
	$(Q)$(MAKE) --no-print-directory check-vm
	$(Q)$(MAKE) --no-print-directory check-run-short
	$(Q)$(MAKE) --no-print-directory check-kvserve-tp

# Everything builds (the CUDA code included, wherever nvcc is), then the
# native tests run.
check-native: all
	$(Q)$(MAKE) --no-print-directory -j$(CHECK_JOBS) --output-sync=target \
		$(CHECK_NATIVE)

install: $(INSTALL_TARGETS)

clean:
	rm -rf $(B)

# What make check builds before its first test (the .mk files add to
# CHECK_BUILD, VM_TESTS and VM_TESTS_LAST).
.SECONDEXPANSION:
check-build: all $$(VM_TESTS) $$(VM_TESTS_LAST) $$(CHECK_BUILD)
