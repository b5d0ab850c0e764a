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

# Man pages, from Documentation/man/NAME.SECTION.rst by rst2man (docutils
# too), installed under $(MANDIR)/manSECTION/.
RST2MAN ?= $(firstword $(shell which rst2man rst2man.py 2>/dev/null))
MAN_SRCS  := $(wildcard $(SRC)/Documentation/man/*.rst)
MAN_PAGES := $(patsubst $(SRC)/Documentation/man/%.rst,$(B)/man/%,$(MAN_SRCS))
# kvarenactl.8 -> $(MANDIR)/man8/kvarenactl.8
man_dest = $(MANDIR)/man$(patsubst .%,%,$(suffix $(1)))/$(1)

$(B)/man/%: $(SRC)/Documentation/man/%.rst
	@test -n "$(RST2MAN)" || { echo "man pages: rst2man not found (apt-get install python3-docutils)" >&2; exit 1; }
	@mkdir -p $(@D)
	$(Q)$(RST2MAN) --halt=2 --report=2 $< $@.tmp && mv $@.tmp $@

.PHONY: man install-man
man: $(MAN_PAGES)

install-man: $(MAN_PAGES)
	$(Q)for p in $(notdir $(MAN_PAGES)); do \
		install -D -m 644 $(B)/man/$$p \
			$(DESTDIR)$(MANDIR)/man$${p##*.}/$$p || exit 1; done

INSTALL_TARGETS += install-man
INSTALL_FILES   += $(foreach p,$(notdir $(MAN_PAGES)),$(call man_dest,$(p)))
