// SPDX-License-Identifier: GPL-2.0
//
// kvev-dynamo: a subscriber to `kvarenactl events --zmq` that decodes
// every message as NVIDIA Dynamo's KV router does, with the libraries it
// uses (serde, rmp-serde, libzmq), and prints what Dynamo would take from
// it as one JSON line per message, for selftests/python/test_routers.py.
//
// The types and rules follow Dynamo's published wire decoding, read (not
// copied) from github.com/ai-dynamo/dynamo:
//   lib/kv-router/src/zmq_wire/types.rs        @ 2bd0a36dcb37
//   lib/kv-router/src/zmq_wire/deserialize.rs  @ 0917ca25f81d
//   lib/kv-router/src/zmq_wire/mod.rs          @ 035d7262 (decode_event_batch)
//   lib/llm/src/kv_router/publisher/zmq_listener.rs, zmq_bootstrap.rs
//                                              @ 0abf0b44 (frames, replay)
//   lib/kv-router/src/zmq_wire/convert.rs      @ 2bd0a36d (block_size rule)
// namely:
//   - a batch is the 3-tuple (ts: f64, events, data_parallel_rank:
//     Option<i32>), so a msgpack array of exactly three;
//   - an event is a map with "type" or a tagged positional array;
//     unknown map keys and trailing array elements are skipped;
//   - a block hash is an untagged i64 or u64 (no bytes);
//   - a live message is exactly three frames [topic, seq (8 bytes
//     big-endian), payload]; any error drops the whole message;
//   - a replay reply is ["", (topic,) seq, payload] on a DEALER, ending at
//     seq -1 with an empty payload;
//   - blocks are taken while block_size equals the router's kv_block_size
//     and the token ids cover them; the first that does not stops it.
// A change of these rules upstream is meant to show here as a failing
// test, not to be absorbed: keep them as Dynamo has them.
//
//   kvev-dynamo --sub ENDPOINT [--topic T] [--block-size N]
//       live: one line per message until stdin says "SEQ" (stop once that
//       sequence number arrived) or closes
//   kvev-dynamo --replay ENDPOINT --from SEQ [--block-size N]
//       one request; one line per reply until the end marker

use std::fmt::Write as _;
use std::io::{BufRead, Write};

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

// ---- the wire types --------------------------------------------------------

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(untagged)]
enum BlockHashValue {
    Signed(i64),
    Unsigned(u64),
}

impl BlockHashValue {
    fn into_u64(self) -> u64 {
        match self {
            BlockHashValue::Signed(v) => v as u64,
            BlockHashValue::Unsigned(v) => v,
        }
    }
}

// A per-block extra key: what Dynamo's ExtraKeyItem takes.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ExtraKeyItem {
    Hash(String),
    HashWithSignedOffset((String, i64)),
    HashWithUnsignedOffset((String, u64)),
    Bytes(Vec<u8>),
    Signed(i64),
    Unsigned(u64),
    Float(f64),
    Bool(bool),
}

type ExtraKeys = Vec<Option<Vec<ExtraKeyItem>>>;

// Token ids: a flat list, or (EAGLE) pairs.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum KvTokenIds {
    Single(Vec<u32>),
    Bigram(Vec<(u32, u32)>),
}

impl KvTokenIds {
    fn flat(self) -> (Vec<u32>, bool) {
        match self {
            KvTokenIds::Single(v) => (v, false),
            KvTokenIds::Bigram(p) => {
                let mut v: Vec<u32> = p.iter().map(|t| t.0).collect();
                if let Some(last) = p.last() {
                    v.push(last.1);
                }
                (v, true)
            }
        }
    }
}

const CACHE_SALT_PREFIX: &str = "dynamo-cache-salt:";

#[derive(Debug)]
enum RawKvEvent {
    BlockStored {
        block_hashes: Vec<BlockHashValue>,
        parent_block_hash: Option<BlockHashValue>,
        token_ids: Vec<u32>,
        is_eagle: bool,
        block_size: usize,
        medium: Option<String>,
        lora_name: Option<String>,
        cache_namespace: Option<String>,
        group_idx: Option<u32>,
        kv_cache_spec_kind: Option<String>,
    },
    BlockRemoved {
        block_hashes: Vec<BlockHashValue>,
        medium: Option<String>,
        group_idx: Option<u32>,
    },
    AllBlocksCleared,
    Ignored,
}

// Dynamo's fallback for a namespace: the first block's extra key with
// its prefix (a LoRA name among them skipped).
fn namespace_from_extra_keys(keys: &Option<ExtraKeys>, lora: &Option<String>) -> Option<String> {
    let first = keys.as_ref()?.first()?.as_ref()?;
    for item in first {
        if let ExtraKeyItem::Hash(s) = item {
            if Some(s) == lora.as_ref() {
                continue;
            }
            if let Some(ns) = s.strip_prefix(CACHE_SALT_PREFIX) {
                if !ns.is_empty() {
                    return Some(ns.to_string());
                }
            }
        }
    }
    None
}

fn empty_is_none(s: Option<String>) -> Option<String> {
    s.filter(|v| !v.is_empty())
}

struct EventVisitor;

impl<'de> Visitor<'de> for EventVisitor {
    type Value = RawKvEvent;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a KV event as a map with \"type\" or a tagged array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawKvEvent, A::Error> {
        let mut tag: Option<String> = None;
        let mut block_hashes: Option<Vec<BlockHashValue>> = None;
        let mut parent: Option<Option<BlockHashValue>> = None;
        let mut token_ids: Option<KvTokenIds> = None;
        let mut block_size: Option<usize> = None;
        let mut medium: Option<Option<String>> = None;
        let mut lora_name: Option<Option<String>> = None;
        let mut cache_salt: Option<Option<String>> = None;
        let mut extra_keys: Option<Option<ExtraKeys>> = None;
        let mut group_idx: Option<Option<u32>> = None;
        let mut kind: Option<Option<String>> = None;

        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "type" => tag = Some(map.next_value()?),
                "block_hashes" => block_hashes = Some(map.next_value()?),
                "parent_block_hash" => parent = Some(map.next_value()?),
                "token_ids" => token_ids = Some(map.next_value()?),
                "block_size" => block_size = Some(map.next_value()?),
                "medium" => medium = Some(map.next_value()?),
                "lora_name" => lora_name = Some(map.next_value()?),
                "cache_salt" => cache_salt = Some(map.next_value()?),
                "extra_keys" => extra_keys = Some(map.next_value()?),
                "group_idx" => group_idx = Some(map.next_value()?),
                "kv_cache_spec_kind" => kind = Some(map.next_value()?),
                "kv_cache_spec_sliding_window" => {
                    let _: Option<u32> = map.next_value()?;
                }
                "locality" | "source_kind" => {
                    let _: Option<String> = map.next_value()?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let tag = tag.ok_or_else(|| de::Error::missing_field("type"))?;
        match tag.as_str() {
            "BlockStored" => {
                let lora_name = lora_name.unwrap_or(None);
                let extra_keys = extra_keys.unwrap_or(None);
                let cache_namespace = cache_salt
                    .unwrap_or(None)
                    .or_else(|| namespace_from_extra_keys(&extra_keys, &lora_name));
                let (token_ids, is_eagle) = token_ids
                    .ok_or_else(|| de::Error::missing_field("token_ids"))?
                    .flat();
                Ok(RawKvEvent::BlockStored {
                    block_hashes: block_hashes
                        .ok_or_else(|| de::Error::missing_field("block_hashes"))?,
                    parent_block_hash: parent.unwrap_or(None),
                    token_ids,
                    is_eagle,
                    block_size: block_size.ok_or_else(|| de::Error::missing_field("block_size"))?,
                    medium: empty_is_none(medium.unwrap_or(None)),
                    lora_name,
                    cache_namespace,
                    group_idx: group_idx.unwrap_or(None),
                    kv_cache_spec_kind: kind.unwrap_or(None),
                })
            }
            "BlockRemoved" => Ok(RawKvEvent::BlockRemoved {
                block_hashes: block_hashes.ok_or_else(|| de::Error::missing_field("block_hashes"))?,
                medium: empty_is_none(medium.unwrap_or(None)),
                group_idx: group_idx.unwrap_or(None),
            }),
            "AllBlocksCleared" => Ok(RawKvEvent::AllBlocksCleared),
            "Ignored" => Ok(RawKvEvent::Ignored),
            other => Err(de::Error::unknown_variant(
                other,
                &["BlockStored", "BlockRemoved", "AllBlocksCleared", "Ignored"],
            )),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawKvEvent, A::Error> {
        let tag: String = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let ev = match tag.as_str() {
            "BlockStored" => {
                // The fixed prefix: [tag, hashes, parent, tokens, block_size,
                // lora_id (dropped), medium, lora_name, extra_keys].
                let block_hashes: Vec<BlockHashValue> = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(1, &self))?;
                let parent: Option<BlockHashValue> = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(2, &self))?;
                let tokens: KvTokenIds = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(3, &self))?;
                let block_size: usize = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(4, &self))?;
                let _lora_id: Option<Option<u64>> = seq.next_element()?;
                let medium: Option<String> = seq.next_element::<Option<String>>()?.unwrap_or(None);
                let lora_name: Option<String> =
                    seq.next_element::<Option<String>>()?.unwrap_or(None);
                let extra_keys: Option<ExtraKeys> =
                    seq.next_element::<Option<ExtraKeys>>()?.unwrap_or(None);
                let cache_namespace = namespace_from_extra_keys(&extra_keys, &lora_name);
                let (token_ids, is_eagle) = tokens.flat();
                RawKvEvent::BlockStored {
                    block_hashes,
                    parent_block_hash: parent,
                    token_ids,
                    is_eagle,
                    block_size,
                    medium: empty_is_none(medium),
                    lora_name,
                    cache_namespace,
                    group_idx: None,
                    kv_cache_spec_kind: None,
                }
            }
            "BlockRemoved" => {
                let block_hashes: Vec<BlockHashValue> = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(1, &self))?;
                let medium: Option<String> = seq.next_element::<Option<String>>()?.unwrap_or(None);
                RawKvEvent::BlockRemoved {
                    block_hashes,
                    medium: empty_is_none(medium),
                    group_idx: None,
                }
            }
            "AllBlocksCleared" => RawKvEvent::AllBlocksCleared,
            "Ignored" => RawKvEvent::Ignored,
            other => {
                return Err(de::Error::unknown_variant(
                    other,
                    &["BlockStored", "BlockRemoved", "AllBlocksCleared", "Ignored"],
                ))
            }
        };
        // The later fields (group, cache spec, locality, ...) are not
        // sent in kvarenactl's array layouts: skipped, as Dynamo skips
        // what it does not know.
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(ev)
    }
}

impl<'de> Deserialize<'de> for RawKvEvent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(EventVisitor)
    }
}

// The batch: exactly [ts, events, data_parallel_rank].
#[derive(Debug)]
struct KvEventBatch {
    ts: f64,
    events: Vec<RawKvEvent>,
    data_parallel_rank: Option<i32>,
}

impl<'de> Deserialize<'de> for KvEventBatch {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let t: (f64, Vec<RawKvEvent>, Option<i32>) = Deserialize::deserialize(d)?;
        Ok(KvEventBatch {
            ts: t.0,
            events: t.1,
            data_parallel_rank: t.2,
        })
    }
}

fn decode_event_batch(payload: &[u8]) -> Result<KvEventBatch, rmp_serde::decode::Error> {
    rmp_serde::from_slice(payload)
}

// ---- JSON out -----------------------------------------------------------------

fn js(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn js_opt(out: &mut String, s: &Option<String>) {
    match s {
        Some(v) => js(out, v),
        None => out.push_str("null"),
    }
}

fn js_hashes(out: &mut String, h: &[BlockHashValue]) {
    out.push('[');
    for (i, v) in h.iter().enumerate() {
        let _ = write!(out, "{}{}", if i > 0 { "," } else { "" }, v.into_u64());
    }
    out.push(']');
}

// What the router takes from one event.
fn event_json(out: &mut String, ev: &RawKvEvent, kv_block_size: usize) {
    match ev {
        RawKvEvent::BlockStored {
            block_hashes,
            parent_block_hash,
            token_ids,
            is_eagle,
            block_size,
            medium,
            lora_name,
            cache_namespace,
            group_idx,
            kv_cache_spec_kind,
        } => {
            out.push_str("{\"type\":\"BlockStored\",\"block_hashes\":");
            js_hashes(out, block_hashes);
            out.push_str(",\"parent_block_hash\":");
            match parent_block_hash {
                Some(p) => {
                    let _ = write!(out, "{}", p.into_u64());
                }
                None => out.push_str("null"),
            }
            let _ = write!(out, ",\"block_size\":{},\"medium\":", block_size);
            js_opt(out, medium);
            out.push_str(",\"lora_name\":");
            js_opt(out, lora_name);
            out.push_str(",\"cache_namespace\":");
            js_opt(out, cache_namespace);
            out.push_str(",\"group_idx\":");
            match group_idx {
                Some(g) => {
                    let _ = write!(out, "{}", g);
                }
                None => out.push_str("null"),
            }
            out.push_str(",\"kv_cache_spec_kind\":");
            js_opt(out, kv_cache_spec_kind);
            // The blocks the router keeps: while the size is its own and
            // the tokens cover the block.
            out.push_str(",\"blocks\":[");
            let mut off = 0usize;
            let extra = if *is_eagle { 1 } else { 0 };
            for i in 0..block_hashes.len() {
                if *block_size != kv_block_size || off + extra + block_size > token_ids.len() {
                    break;
                }
                if i > 0 {
                    out.push(',');
                }
                out.push('[');
                for (j, t) in token_ids[off..off + block_size].iter().enumerate() {
                    let _ = write!(out, "{}{}", if j > 0 { "," } else { "" }, t);
                }
                out.push(']');
                off += block_size;
            }
            out.push_str("]}");
        }
        RawKvEvent::BlockRemoved {
            block_hashes,
            medium,
            group_idx,
        } => {
            out.push_str("{\"type\":\"BlockRemoved\",\"block_hashes\":");
            js_hashes(out, block_hashes);
            out.push_str(",\"medium\":");
            js_opt(out, medium);
            out.push_str(",\"group_idx\":");
            match group_idx {
                Some(g) => {
                    let _ = write!(out, "{}", g);
                }
                None => out.push_str("null"),
            }
            out.push('}');
        }
        RawKvEvent::AllBlocksCleared => out.push_str("{\"type\":\"AllBlocksCleared\"}"),
        RawKvEvent::Ignored => out.push_str("{\"type\":\"Ignored\"}"),
    }
}

// One message's line: what was decoded, or why the router drops it.
fn message_line(seq: Option<u64>, frames: usize, payload: &[u8], replay: bool, kv_block_size: usize) -> String {
    let mut out = String::from("{");
    match seq {
        Some(s) => {
            let _ = write!(out, "\"seq\":{}", s);
        }
        None => out.push_str("\"seq\":null"),
    }
    let _ = write!(out, ",\"frames\":{},\"replay\":{}", frames, replay);
    if seq.is_none() {
        out.push_str(",\"error\":\"expected three ZMQ frames and an 8-byte sequence number\"}");
        return out;
    }
    match decode_event_batch(payload) {
        Ok(b) => {
            let _ = write!(out, ",\"ts\":{:?},\"data_parallel_rank\":", b.ts);
            match b.data_parallel_rank {
                Some(r) => {
                    let _ = write!(out, "{}", r);
                }
                None => out.push_str("null"),
            }
            out.push_str(",\"events\":[");
            for (i, ev) in b.events.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                event_json(&mut out, ev, kv_block_size);
            }
            out.push_str("]}");
        }
        Err(e) => {
            out.push_str(",\"error\":");
            js(&mut out, &format!("Failed to decode ZMQ KV batch: {}", e));
            out.push('}');
        }
    }
    out
}

fn seq_of(frame: &[u8]) -> Option<u64> {
    if frame.len() != 8 {
        return None;
    }
    let mut b = [0u8; 8];
    b.copy_from_slice(frame);
    Some(u64::from_be_bytes(b))
}

// ---- the sockets -------------------------------------------------------------

fn emit(line: &str) {
    let mut o = std::io::stdout();
    let _ = writeln!(o, "{}", line);
    let _ = o.flush();
}

fn live(ctx: &zmq::Context, ep: &str, topic: &str, kv_block_size: usize) -> Result<(), String> {
    let sub = ctx.socket(zmq::SUB).map_err(|e| e.to_string())?;
    sub.set_linger(0).map_err(|e| e.to_string())?;
    sub.set_subscribe(topic.as_bytes()).map_err(|e| e.to_string())?;
    sub.connect(ep).map_err(|e| format!("connect {}: {}", ep, e))?;
    let mut stop_at: Option<u64> = None;
    let mut last: Option<u64> = None;
    let stdin = std::io::stdin();
    let mut stdin_open = true;
    loop {
        if let (Some(s), Some(l)) = (stop_at, last) {
            if l >= s {
                return Ok(());
            }
        }
        let mut items = [
            sub.as_poll_item(zmq::POLLIN),
            zmq::PollItem::from_fd(0, if stdin_open { zmq::POLLIN } else { zmq::PollEvents::empty() }),
        ];
        match zmq::poll(&mut items, -1) {
            Err(zmq::Error::EINTR) => continue,
            r => r.map_err(|e| e.to_string())?,
        };
        // a closed pipe is POLLHUP, which zmq reports as an error
        if items[1].is_readable() || items[1].is_error() {
            let mut line = String::new();
            if stdin.lock().read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                if stop_at.is_none() {
                    return Ok(());
                }
                stdin_open = false;
            } else {
                stop_at = Some(line.trim().parse().map_err(|_| format!("stdin: {:?}", line))?);
            }
        }
        if items[0].is_readable() {
            let frames = sub.recv_multipart(0).map_err(|e| e.to_string())?;
            let seq = if frames.len() == 3 { seq_of(&frames[1]) } else { None };
            let payload: &[u8] = if frames.len() == 3 { &frames[2] } else { &[] };
            emit(&message_line(seq, frames.len(), payload, false, kv_block_size));
            if seq.is_some() {
                last = seq;
            }
        }
    }
}

fn replay(ctx: &zmq::Context, ep: &str, from: u64, kv_block_size: usize) -> Result<(), String> {
    let dealer = ctx.socket(zmq::DEALER).map_err(|e| e.to_string())?;
    dealer.set_linger(0).map_err(|e| e.to_string())?;
    dealer.set_rcvtimeo(60_000).map_err(|e| e.to_string())?;
    dealer.connect(ep).map_err(|e| format!("connect {}: {}", ep, e))?;
    let start = from.to_be_bytes();
    dealer
        .send_multipart(&[&b""[..], &start[..]], 0)
        .map_err(|e| e.to_string())?;
    loop {
        let frames = dealer
            .recv_multipart(0)
            .map_err(|e| format!("replay: {}", e))?;
        // ["", seq, payload] or ["", topic, seq, payload].
        let (seq, payload) = match frames.len() {
            3 if frames[0].is_empty() => (seq_of(&frames[1]), &frames[2]),
            4 if frames[0].is_empty() => (seq_of(&frames[2]), &frames[3]),
            _ => (None, &frames[0]),
        };
        if seq == Some(u64::MAX) {
            let mut out = format!("{{\"end\":true,\"frames\":{},\"payload_bytes\":{}", frames.len(), payload.len());
            if frames.len() == 4 {
                out.push_str(",\"topic\":");
                js(&mut out, &String::from_utf8_lossy(&frames[1]));
            }
            out.push('}');
            emit(&out);
            return Ok(());
        }
        emit(&message_line(seq, frames.len(), payload, true, kv_block_size));
        if seq.is_none() {
            return Err("a malformed replay reply".into());
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut sub = None;
    let mut rep = None;
    let mut topic = String::new();
    let mut from = 0u64;
    let mut kv_block_size = 16usize;
    let mut i = 1;
    while i < args.len() {
        let v = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--sub" => sub = Some(v),
            "--replay" => rep = Some(v),
            "--topic" => topic = v,
            "--from" => from = v.parse().expect("--from SEQ"),
            "--block-size" => kv_block_size = v.parse().expect("--block-size N"),
            a => {
                eprintln!("kvev-dynamo: unknown argument {}", a);
                std::process::exit(2);
            }
        }
        i += 2;
    }
    let ctx = zmq::Context::new();
    let r = match (sub, rep) {
        (Some(ep), None) => live(&ctx, &ep, &topic, kv_block_size),
        (None, Some(ep)) => replay(&ctx, &ep, from, kv_block_size),
        _ => Err("one of --sub ENDPOINT or --replay ENDPOINT".into()),
    };
    if let Err(e) = r {
        eprintln!("kvev-dynamo: {}", e);
        std::process::exit(1);
    }
}
