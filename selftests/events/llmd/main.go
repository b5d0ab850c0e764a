// SPDX-License-Identifier: GPL-2.0
//
// kvev-llmd: a subscriber to `kvarenactl events --zmq` that decodes every
// message as llm-d's KV-cache indexer does, with the library it decodes
// with (github.com/vmihailenco/msgpack/v5, Debian's
// golang-github-vmihailenco-msgpack.v5-dev) and libzmq (through cgo, as
// llm-d's pebbe/zmq4 did), and prints what llm-d would take from it, one
// JSON line per message, for selftests/python/test_routers.py.
//
// Two sets of rules, read (not copied) from llm-d's sources:
//
//	-rules kv-cache    github.com/llm-d/llm-d-kv-cache v0.8.1 (0030c3ba),
//	                   pkg/kvevents/engineadapter/vllm_adapter.go and
//	                   common.go, with the map-encoded events of its PR
//	                   #661 (2bbcc4c5); its pool.go (7be76e11) for what an
//	                   error does: the whole message is dropped.
//	-rules kv-cache-manager
//	                   github.com/llm-d/llm-d-kv-cache-manager a378f5b3,
//	                   pkg/kvcache/kvevents/events.go and pool.go: events
//	                   into structs of exactly their fields; a bad event
//	                   is skipped, the rest of the message kept.
//
// Both decode the batch into a struct of three fields from a msgpack
// array, which msgpack/v5 takes only with exactly three elements (the
// `msgpack:",array"` tag on "_" is llm-d's, and does nothing).  A change
// of these rules upstream is meant to show here as a failing test, not
// to be absorbed: keep them as llm-d has them.
//
//	kvev-llmd -sub ENDPOINT [-bind] [-filter kv@] [-rules kv-cache]
//
// reads until stdin says "SEQ" (stop once that sequence number arrived)
// or closes.
package main

/*
#cgo LDFLAGS: -lzmq
#include <errno.h>
#include <stdlib.h>
#include <zmq.h>

// The Go runtime preempts with signals (SIGURG): a blocking call in C
// returns EINTR now and then, and is simply made again.
static int kvev_poll(void *sock, int with_stdin, long timeout)
{
	zmq_pollitem_t it[2] = {
		{ .socket = sock, .events = ZMQ_POLLIN },
		{ .fd = 0, .events = ZMQ_POLLIN },
	};
	int n;

	do
		n = zmq_poll(it, with_stdin ? 2 : 1, timeout);
	while (n < 0 && zmq_errno() == EINTR);
	if (n < 0)
		return -1;
	// a closed pipe is POLLHUP, which zmq reports as an error
	return ((it[0].revents & ZMQ_POLLIN) ? 1 : 0) |
	       ((with_stdin && (it[1].revents & (ZMQ_POLLIN | ZMQ_POLLERR))) ?
		2 : 0);
}

static int kvev_msg_recv(zmq_msg_t *msg, void *sock)
{
	int n;

	do
		n = zmq_msg_recv(msg, sock, 0);
	while (n < 0 && zmq_errno() == EINTR);
	return n;
}
*/
import "C"

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"
)

// ---- the wire types ------------------------------------------------------

// The batch, as llm-d declares it.
type msgpackVLLMEventBatch struct {
	_                struct{} `msgpack:",array"`
	TS               float64
	Events           []msgpack.RawMessage
	DataParallelRank *int `msgpack:",omitempty"`
}

// kv-cache-manager's events: the fields after the tag, exactly.
type managerBlockStored struct {
	BlockHashes     []any
	ParentBlockHash any
	TokenIds        []uint32
	BlockSize       int
	LoraID          *int    `msgpack:",omitempty"`
	Medium          *string `msgpack:",omitempty"`
}

type managerBlockRemoved struct {
	BlockHashes []any
	Medium      *string `msgpack:",omitempty"`
}

// What the indexer takes from an event, printed.
type event struct {
	Type       string     `json:"type"`
	Hashes     []uint64   `json:"block_hashes,omitempty"`
	Parent     uint64     `json:"parent_block_hash"` // 0: none
	TokenIds   []uint32   `json:"token_ids,omitempty"`
	BlockSize  int        `json:"block_size,omitempty"`
	Tier       string     `json:"tier,omitempty"`
	LoraName   *string    `json:"lora_name,omitempty"`
	ExtraKeys  [][]string `json:"extra_keys,omitempty"`
	GroupIdx   *int       `json:"group_idx,omitempty"`
	SpecKind   *string    `json:"kv_cache_spec_kind,omitempty"`
	SkipReason string     `json:"skipped,omitempty"`
}

type line struct {
	Seq    *uint64 `json:"seq"`
	Frames int     `json:"frames"`
	Pod    string  `json:"pod,omitempty"`
	Model  string  `json:"model,omitempty"`
	Rank   *int    `json:"data_parallel_rank,omitempty"`
	TS     float64 `json:"ts,omitempty"`
	Events []event `json:"events"`
	Error  string  `json:"error,omitempty"`
}

// ---- llm-d's conversions -------------------------------------------------

// getHashAsUint64: uint64 as it is, int64 cast, bytes by their last 8
// (big-endian); every other type an error - msgpack/v5 decodes a small
// integer into `any` as int8, uint8, uint32 ..., which llm-d refuses.
func hashAsUint64(v any) (uint64, error) {
	switch h := v.(type) {
	case uint64:
		return h, nil
	case int64:
		return uint64(h), nil
	case []byte:
		if len(h) == 0 {
			return 0, errors.New("empty hash bytes")
		}
		var b [8]byte
		if len(h) >= 8 {
			copy(b[:], h[len(h)-8:])
		} else {
			copy(b[8-len(h):], h)
		}
		return binary.BigEndian.Uint64(b[:]), nil
	default:
		return 0, fmt.Errorf("unsupported hash type %T", v)
	}
}

// toInt: any integer width.
func toInt(v any) (int64, error) {
	switch n := v.(type) {
	case int8:
		return int64(n), nil
	case int16:
		return int64(n), nil
	case int32:
		return int64(n), nil
	case int64:
		return n, nil
	case uint8:
		return int64(n), nil
	case uint16:
		return int64(n), nil
	case uint32:
		return int64(n), nil
	case uint64:
		return int64(n), nil
	default:
		return 0, fmt.Errorf("not an integer: %T", v)
	}
}

func hashes(v any) ([]uint64, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("block_hashes is %T, not a list", v)
	}
	out := make([]uint64, 0, len(list))
	for _, h := range list {
		u, err := hashAsUint64(h)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

func optString(v any) (*string, error) {
	if v == nil {
		return nil, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("%T, not a string", v)
	}
	return &s, nil
}

// extra_keys: nil or a list per block, each nil or a list; a string in
// it (or a list led by one) is a multimodal hash to llm-d.
func extraKeys(v any) ([][]string, error) {
	if v == nil {
		return nil, nil
	}
	outer, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("extra_keys has invalid type %T", v)
	}
	out := make([][]string, len(outer))
	for i, blk := range outer {
		if blk == nil {
			continue
		}
		items, ok := blk.([]any)
		if !ok {
			return nil, fmt.Errorf("extra_keys[%d] has invalid type %T, expected []any or nil", i, blk)
		}
		out[i] = []string{}
		for _, it := range items {
			switch x := it.(type) {
			case string:
				out[i] = append(out[i], x)
			case []any:
				if len(x) > 0 {
					if s, ok := x[0].(string); ok {
						out[i] = append(out[i], s)
					}
				}
			}
		}
	}
	return out, nil
}

func tier(medium *string) string {
	if medium == nil || *medium == "" {
		return "gpu"
	}
	return strings.ToLower(*medium)
}

// The field names of map-encoded events, in the positional order.
var mapFields = map[string][]string{
	"BlockStored": {"block_hashes", "parent_block_hash", "token_ids", "block_size",
		"lora_id", "medium", "lora_name", "extra_keys", "group_idx",
		"kv_cache_spec_kind", "kv_cache_spec_sliding_window"},
	"BlockRemoved": {"block_hashes", "medium", "group_idx"},
}

// A map-encoded event as the positional fields.
func mapEventToFields(m map[string]any) ([]any, error) {
	tag, ok := m["type"].(string)
	if !ok {
		return nil, errors.New("map event without a string \"type\"")
	}
	fields := []any{tag}
	for _, name := range mapFields[tag] {
		fields = append(fields, m[name])
	}
	return fields, nil
}

func normalizeMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, x := range m {
			if s, ok := k.(string); ok {
				out[s] = x
			}
		}
		return out, true
	}
	return nil, false
}

// kv-cache: each event as positional fields, by index.
func kvCacheEvent(raw msgpack.RawMessage) (event, error) {
	var decoded any
	if err := msgpack.Unmarshal(raw, &decoded); err != nil {
		return event{}, err
	}
	var fields []any
	if m, ok := normalizeMap(decoded); ok {
		f, err := mapEventToFields(m)
		if err != nil {
			return event{}, err
		}
		fields = f
	} else if list, ok := decoded.([]any); ok {
		fields = list
	} else {
		return event{}, fmt.Errorf("event is %T", decoded)
	}
	at := func(i int) any {
		if i < len(fields) {
			return fields[i]
		}
		return nil
	}
	if len(fields) == 0 {
		return event{}, errors.New("empty event")
	}
	tag, ok := fields[0].(string)
	if !ok {
		return event{}, fmt.Errorf("event tag is %T", fields[0])
	}
	switch tag {
	case "BlockStored":
		if len(fields) < 5 {
			return event{}, fmt.Errorf("BlockStored with %d fields", len(fields))
		}
		ev := event{Type: tag}
		var err error
		if ev.Hashes, err = hashes(at(1)); err != nil {
			return event{}, err
		}
		if at(2) != nil {
			if ev.Parent, err = hashAsUint64(at(2)); err != nil {
				return event{}, err
			}
		}
		toks, ok := at(3).([]any)
		if !ok && at(3) != nil {
			return event{}, fmt.Errorf("token_ids is %T", at(3))
		}
		for _, t := range toks {
			n, err := toInt(t)
			if err != nil {
				return event{}, err
			}
			ev.TokenIds = append(ev.TokenIds, uint32(n))
		}
		bs, err := toInt(at(4))
		if err != nil {
			return event{}, err
		}
		ev.BlockSize = int(bs)
		medium, err := optString(at(6))
		if err != nil {
			return event{}, fmt.Errorf("medium: %v", err)
		}
		ev.Tier = tier(medium)
		if ev.LoraName, err = optString(at(7)); err != nil {
			return event{}, fmt.Errorf("lora_name: %v", err)
		}
		if ev.ExtraKeys, err = extraKeys(at(8)); err != nil {
			return event{}, err
		}
		if at(9) != nil {
			g, err := toInt(at(9))
			if err != nil || g < 0 {
				return event{}, fmt.Errorf("bad group_idx %v", at(9))
			}
			gi := int(g)
			ev.GroupIdx = &gi
		}
		if ev.SpecKind, err = optString(at(10)); err != nil {
			return event{}, fmt.Errorf("kv_cache_spec_kind: %v", err)
		}
		return ev, nil
	case "BlockRemoved":
		if len(fields) < 2 {
			return event{}, fmt.Errorf("BlockRemoved with %d fields", len(fields))
		}
		ev := event{Type: tag}
		var err error
		if ev.Hashes, err = hashes(at(1)); err != nil {
			return event{}, err
		}
		medium, err := optString(at(2))
		if err != nil {
			return event{}, fmt.Errorf("medium: %v", err)
		}
		ev.Tier = tier(medium)
		return ev, nil
	case "AllBlocksCleared":
		return event{Type: tag}, nil
	default:
		return event{}, fmt.Errorf("unknown event tag %q", tag)
	}
}

// kv-cache-manager: the tag, then the rest re-encoded into a struct.
func managerEvent(raw msgpack.RawMessage) (event, error) {
	var parts []msgpack.RawMessage
	if err := msgpack.Unmarshal(raw, &parts); err != nil {
		return event{}, err
	}
	if len(parts) == 0 {
		return event{}, errors.New("empty event")
	}
	var tag string
	if err := msgpack.Unmarshal(parts[0], &tag); err != nil {
		return event{}, err
	}
	rest, err := msgpack.Marshal(parts[1:])
	if err != nil {
		return event{}, err
	}
	switch tag {
	case "BlockStored":
		var s managerBlockStored
		if err := msgpack.Unmarshal(rest, &s); err != nil {
			return event{}, err
		}
		ev := event{Type: tag, TokenIds: s.TokenIds, BlockSize: s.BlockSize, Tier: tier(s.Medium)}
		if ev.Hashes, err = hashes(s.BlockHashes); err != nil {
			return event{}, err
		}
		if s.ParentBlockHash != nil {
			if ev.Parent, err = hashAsUint64(s.ParentBlockHash); err != nil {
				return event{}, err
			}
		}
		return ev, nil
	case "BlockRemoved":
		var r managerBlockRemoved
		if err := msgpack.Unmarshal(rest, &r); err != nil {
			return event{}, err
		}
		ev := event{Type: tag, Tier: tier(r.Medium)}
		if ev.Hashes, err = hashes(r.BlockHashes); err != nil {
			return event{}, err
		}
		return ev, nil
	case "AllBlocksCleared":
		return event{Type: tag}, nil
	default:
		return event{Type: tag, SkipReason: "unknown event tag"}, nil
	}
}

// One message: [topic, seq, payload].
func decodeMessage(frames [][]byte, rules string) line {
	l := line{Frames: len(frames), Events: []event{}}
	if len(frames) != 3 || len(frames[1]) < 8 {
		l.Error = "unexpected message parts"
		return l
	}
	seq := binary.BigEndian.Uint64(frames[1])
	l.Seq = &seq
	parts := strings.Split(string(frames[0]), "@")
	if len(parts) == 3 {
		l.Pod, l.Model = parts[1], parts[2]
	} else if rules == "kv-cache-manager" {
		l.Error = "topic is not kv@POD@MODEL"
		return l
	} else {
		l.Pod = string(frames[0])
	}
	var b msgpackVLLMEventBatch
	if err := msgpack.Unmarshal(frames[2], &b); err != nil {
		l.Error = "Failed to parse message: " + err.Error()
		return l
	}
	l.TS, l.Rank = b.TS, b.DataParallelRank
	for _, raw := range b.Events {
		if rules == "kv-cache-manager" {
			ev, err := managerEvent(raw)
			if err != nil {
				ev = event{SkipReason: err.Error()}
			}
			l.Events = append(l.Events, ev)
			continue
		}
		ev, err := kvCacheEvent(raw)
		if err != nil {
			// The whole message goes.
			l.Error = "Failed to parse message: " + err.Error()
			l.Events = []event{}
			return l
		}
		l.Events = append(l.Events, ev)
	}
	return l
}

// ---- libzmq -------------------------------------------------------------------

func zerr(what string) error {
	return fmt.Errorf("%s: %s", what, C.GoString(C.zmq_strerror(C.zmq_errno())))
}

func recvMultipart(sock unsafe.Pointer) ([][]byte, error) {
	var frames [][]byte
	for {
		var msg C.zmq_msg_t
		C.zmq_msg_init(&msg)
		if C.kvev_msg_recv(&msg, sock) < 0 {
			C.zmq_msg_close(&msg)
			return nil, zerr("recv")
		}
		frames = append(frames, C.GoBytes(C.zmq_msg_data(&msg), C.int(C.zmq_msg_size(&msg))))
		more := C.zmq_msg_more(&msg)
		C.zmq_msg_close(&msg)
		if more == 0 {
			return frames, nil
		}
	}
}

func run() error {
	ep := flag.String("sub", "", "the endpoint")
	bind := flag.Bool("bind", false, "bind it (llm-d's global socket)")
	filter := flag.String("filter", "kv@", "the subscription's topic filter")
	rules := flag.String("rules", "kv-cache", "kv-cache or kv-cache-manager")
	flag.Parse()
	if *ep == "" || (*rules != "kv-cache" && *rules != "kv-cache-manager") {
		return errors.New("usage: kvev-llmd -sub ENDPOINT [-bind] [-filter F] [-rules kv-cache|kv-cache-manager]")
	}
	ctx := C.zmq_ctx_new()
	sock := C.zmq_socket(ctx, C.ZMQ_SUB)
	if sock == nil {
		return zerr("socket")
	}
	cf := C.CString(*filter)
	defer C.free(unsafe.Pointer(cf))
	if C.zmq_setsockopt(sock, C.ZMQ_SUBSCRIBE, unsafe.Pointer(cf), C.size_t(len(*filter))) != 0 {
		return zerr("subscribe")
	}
	cep := C.CString(*ep)
	defer C.free(unsafe.Pointer(cep))
	if *bind {
		if C.zmq_bind(sock, cep) != 0 {
			return zerr("bind " + *ep)
		}
	} else if C.zmq_connect(sock, cep) != 0 {
		return zerr("connect " + *ep)
	}
	out := json.NewEncoder(os.Stdout)
	in := bufio.NewReader(os.Stdin)
	stdinOpen := true
	var stopAt, last *uint64
	for {
		if stopAt != nil && last != nil && *last >= *stopAt {
			return nil
		}
		with := 0
		if stdinOpen {
			with = 1
		}
		r := C.kvev_poll(sock, C.int(with), -1)
		if r < 0 {
			return zerr("poll")
		}
		if r&2 != 0 {
			s, err := in.ReadString('\n')
			if err != nil {
				if stopAt == nil {
					return nil
				}
				stdinOpen = false
			} else {
				n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
				if err != nil {
					return fmt.Errorf("stdin: %q", s)
				}
				stopAt = &n
			}
		}
		if r&1 != 0 {
			frames, err := recvMultipart(sock)
			if err != nil {
				return err
			}
			l := decodeMessage(frames, *rules)
			if err := out.Encode(l); err != nil {
				return err
			}
			if l.Seq != nil {
				last = l.Seq
			}
		}
	}
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kvev-llmd:", err)
		os.Exit(1)
	}
}
