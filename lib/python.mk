# SPDX-License-Identifier: GPL-2.0
#
# The Python package kvarena: lib/python/kvarena/, ctypes over
# libkvarena.so.1, so it needs nothing beyond Debian's python3 (numpy and
# torch only to use the views it exports).  Tests: selftests/python/.
#
#   make install-python   the package into $(PYTHONDIR)/kvarena/, with a
#                         _config.py that names $(LIBDIR), where the
#                         package looks for the library when the dynamic
#                         loader's path does not have it

PY_PKG_SRCS  := $(wildcard $(SRC)/lib/python/kvarena/*.py)
PY_PKG_FILES := $(notdir $(PY_PKG_SRCS)) _config.py

.PHONY: install-python
install-python:
	$(Q)install -d $(DESTDIR)$(PYTHONDIR)/kvarena
	$(Q)install -m 644 $(PY_PKG_SRCS) $(DESTDIR)$(PYTHONDIR)/kvarena/
	$(Q)printf '%s\n' '# Written by make install: where libkvarena was installed.' \
		'LIBDIR = "$(LIBDIR)"' > $(DESTDIR)$(PYTHONDIR)/kvarena/_config.py
	$(Q)chmod 644 $(DESTDIR)$(PYTHONDIR)/kvarena/_config.py

INSTALL_TARGETS += install-python
INSTALL_FILES   += $(addprefix $(PYTHONDIR)/kvarena/,$(PY_PKG_FILES))
