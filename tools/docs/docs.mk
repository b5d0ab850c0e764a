# SPDX-License-Identifier: GPL-2.0
#
# The architecture picture of Documentation/index.rst, drawn by archsvg
# (tools/docs/archsvg.c) into $(B)/doc/architecture.svg; check-docs-svg
# fails where Documentation/architecture.svg is not that picture, or is not
# well-formed XML (make architecture-svg writes it).

$(B)/tools/archsvg: $(SRC)/tools/docs/archsvg.c $(KVT_SVG_SRCS) \
		$(SRC)/tools/common/svg.h
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(KVA_CFLAGS) -I$(SRC)/tools/common -o $@ \
		$(SRC)/tools/docs/archsvg.c $(KVT_SVG_SRCS) -lm

$(B)/doc/architecture.svg: $(B)/tools/archsvg
	$(Q)mkdir -p $(@D)
	$(Q)$(B)/tools/archsvg > $@.tmp && mv $@.tmp $@

.PHONY: architecture-svg check-docs-svg
architecture-svg: $(B)/doc/architecture.svg
	$(Q)cp $< $(SRC)/Documentation/architecture.svg

check-docs-svg: $(B)/doc/architecture.svg
	$(Q)$(PYTHON) -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' $<
	$(Q)cmp -s $< $(SRC)/Documentation/architecture.svg || \
		{ echo "check-docs-svg: Documentation/architecture.svg is not what tools/docs/archsvg.c draws (make architecture-svg)" >&2; exit 1; }
	@echo "  DOCS    Documentation/architecture.svg is archsvg's"

ALL          += $(B)/doc/architecture.svg
CHECK_NATIVE += check-docs-svg
