# SPDX-License-Identifier: GPL-2.0
#
# tools/common: what the tools share (number parsing, the model table and
# geometry options, the trace reader).  Each tool compiles these sources
# with its own; nothing is built here.

KVT_COMMON_SRCS   := $(addprefix $(SRC)/tools/common/,num.c model.c trace.c hfconfig.c)
KVT_COMMON_HDRS   := $(SRC)/tools/common/kvtools.h \
		     $(SRC)/include/kvarena/layout.h
KVT_COMMON_CFLAGS := -I$(SRC)/tools/common

# svg.c: the pictures (kvsim --svg, the main job's run.svg).
KVT_SVG_SRCS := $(SRC)/tools/common/svg.c
KVT_SVG_HDRS := $(SRC)/tools/common/svg.h
