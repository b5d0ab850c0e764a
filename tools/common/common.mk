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

# The remote tier (kvarenactl remote, its tests): the block format and the
# Redis Cluster client.  The client needs hiredis (Debian's
# libhiredis-dev), which has a static library too.
KVT_HIREDIS := $(shell pkg-config --exists hiredis 2>/dev/null && echo y)
KVT_REMOTE_SRCS := $(SRC)/tools/common/kvblock.c $(SRC)/tools/common/rcluster.c \
		   $(SRC)/lib/src/sha256.c
KVT_REMOTE_HDRS := $(SRC)/tools/common/kvblock.h $(SRC)/tools/common/rcluster.h \
		   $(SRC)/lib/src/sha256.h
KVT_REMOTE_LIBS := $(if $(KVT_HIREDIS),$(shell pkg-config --libs hiredis))
