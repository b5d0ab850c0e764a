# SPDX-License-Identifier: GPL-2.0
#
# The routers' decoders of kvarenactl events --zmq, built from Debian's
# packages and run in the VM by selftests/python/test_routers.py
# (check-vm-installed):
#   kvev-llmd    Go: llm-d's rules, github.com/vmihailenco/msgpack/v5
#                (golang-go, golang-github-vmihailenco-msgpack.v5-dev)
#   kvev-dynamo  Rust: Dynamo's rules, serde and rmp-serde (cargo, rustc,
#                librust-{serde,serde-derive,rmp-serde,zmq}-dev), built
#                offline against Debian's crates in /usr/share/cargo/registry
# Both link libzmq (libzmq3-dev).  Natively, check-events-loops runs
# loop_test.py on them.  Documentation/events.rst.

EVT     := $(abspath $(B))/selftests/events
EVT_SRC := $(SRC)/selftests/events
KVEV_LLMD   := $(EVT)/kvev-llmd
KVEV_DYNAMO := $(EVT)/kvev-dynamo
KVEV_BINS   := $(KVEV_LLMD) $(KVEV_DYNAMO)
CHECK_BUILD += $(KVEV_BINS)
GO      ?= /usr/bin/go
CARGO   ?= /usr/bin/cargo
RUSTC   ?= /usr/bin/rustc
GOCODE  ?= /usr/share/gocode
CRATES  ?= /usr/share/cargo/registry

$(KVEV_LLMD): $(EVT_SRC)/llmd/main.go
	@test -x $(GO) -a -d $(GOCODE)/src/github.com/vmihailenco/msgpack/v5 || \
		{ echo "kvev-llmd: needs $(GO) and msgpack/v5 (apt-get install golang-go golang-github-vmihailenco-msgpack.v5-dev)" >&2; exit 1; }
	@mkdir -p $(@D)
	$(Q)cd $(EVT_SRC)/llmd && GOPATH=$(GOCODE) GO111MODULE=off GOFLAGS= \
		GOCACHE=$(EVT)/go-cache $(GO) build -o $@ main.go

$(KVEV_DYNAMO): $(EVT_SRC)/dynamo/Cargo.toml $(EVT_SRC)/dynamo/src/main.rs
	@test -x $(CARGO) -a -n "$$(ls -d $(CRATES)/rmp-serde-* $(CRATES)/zmq-0* 2>/dev/null)" || \
		{ echo "kvev-dynamo: needs $(CARGO) and Debian's crates (apt-get install cargo rustc librust-serde-dev librust-serde-derive-dev librust-rmp-serde-dev librust-zmq-dev)" >&2; exit 1; }
	@rm -rf $(EVT)/dynamo-src && mkdir -p $(EVT)/dynamo-src $(EVT)/cargo-home
	$(Q)cp -r $(EVT_SRC)/dynamo/Cargo.toml $(EVT_SRC)/dynamo/src $(EVT)/dynamo-src/
	@printf '[source.crates-io]\nreplace-with = "debian"\n[source.debian]\ndirectory = "%s"\n[net]\noffline = true\n' \
		$(CRATES) > $(EVT)/cargo-home/config.toml
	$(Q)CARGO_HOME=$(EVT)/cargo-home RUSTC=$(RUSTC) $(CARGO) build --quiet \
		--release --manifest-path $(EVT)/dynamo-src/Cargo.toml \
		--target-dir $(EVT)/dynamo-target
	$(Q)cp $(EVT)/dynamo-target/release/kvev-dynamo $@

# Natively: the decoders' read loops survive interrupted polls and end
# when their stdin closes (loop_test.py).
.PHONY: check-events-loops
check-events-loops: $(KVEV_BINS)
	$(Q)python3 $(EVT_SRC)/loop_test.py $(KVEV_LLMD) $(KVEV_DYNAMO)

CHECK_NATIVE += check-events-loops
