#!/usr/bin/env python3
"""Writes the hand-made seed inputs of the fuzz targets into fuzz/corpus/<target>/seed-*.

Every seed is small (a few KB at most) and written from scratch here — nothing is copied from
../shared. Run it again after changing a target's input layout; inputs the fuzzer found live next
to the seeds under their hash names and are kept.
    python3 fuzz/make_seeds.py
"""
import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


# ---------------------------------------------------------------- GGUF
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)


def gstr(s):
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gval(t, v):
    fmt = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?", U64: "<Q",
           I64: "<q", F64: "<d"}
    if t == STR:
        return gstr(v)
    if t == ARR:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(gval(et, x) for x in items)
    return struct.pack(fmt[t], v)


def gguf(kvs, tensors, version=3, alignment=32):
    """kvs: [(key, type, value)]; tensors: [(name, dims, ggml_type, data bytes)]."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for k, t, v in kvs:
        out += gstr(k) + struct.pack("<I", t) + gval(t, v)
    offset = 0
    infos, blobs = b"", b""
    for name, dims, gtype, data in tensors:
        infos += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", gtype, offset)
        pad = (-len(data)) % alignment
        blobs += data + b"\0" * pad
        offset += len(data) + pad
    out += infos
    out += b"\0" * ((-len(out)) % alignment)
    return out + blobs


def f32s(n, seed=1):
    return b"".join(struct.pack("<f", ((i * 37 + seed) % 17) / 16.0 - 0.5) for i in range(n))


def spm_vocab(n):
    byte_tokens = [0x0A, 0x20, 0xE4, 0xB8, 0x96, 0xFF]
    toks = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in byte_tokens]
    words = ["\u2581the", "\u2581a", "\u2581cat", "\u2581sat", "\u2581on", "\u2581mat", "\u2581", "e", "t", "h",
             "\u2581once", "\u2581upon", "\u2581time", "\u2581\u4e16"]
    toks += words
    toks = toks[:n] if n else toks
    types = [2, 3, 3] + [6] * len(byte_tokens) + [1] * len(words)
    return toks, [0.0] * (3 + len(byte_tokens)) + [-float(i) for i in range(len(words))], types[:len(toks)]


def tiny_llama(vocab_kvs=True, gqa=True, tied=False):
    dim, ff, heads, kv = 4, 8, 2, 1 if gqa else 2
    toks, scores, types = spm_vocab(0)
    nv = len(toks)
    kvs = [("general.architecture", STR, "llama"), ("general.name", STR, "tiny"),
           ("llama.context_length", U32, 64), ("llama.embedding_length", U32, dim),
           ("llama.feed_forward_length", U32, ff), ("llama.attention.head_count", U32, heads),
           ("llama.attention.head_count_kv", U32, kv), ("llama.block_count", U32, 1),
           ("llama.rope.dimension_count", U32, dim // heads),
           ("llama.attention.layer_norm_rms_epsilon", F32, 1e-5)]
    if vocab_kvs:
        kvs += [("tokenizer.ggml.model", STR, "llama"), ("tokenizer.ggml.tokens", ARR, (STR, toks)),
                ("tokenizer.ggml.scores", ARR, (F32, scores)), ("tokenizer.ggml.token_type", ARR, (I32, types)),
                ("tokenizer.ggml.bos_token_id", U32, 1), ("tokenizer.ggml.eos_token_id", U32, 2),
                ("tokenizer.ggml.unknown_token_id", U32, 0)]
    hd = dim // heads
    t = [("token_embd.weight", [dim, nv], 0, f32s(dim * nv)), ("output_norm.weight", [dim], 0, f32s(dim, 2))]
    if not tied:
        t.append(("output.weight", [dim, nv], 1, b"\0\x3c" * (dim * nv)))  # F16 ones
    t += [("blk.0.attn_q.weight", [dim, dim], 0, f32s(dim * dim, 3)),
          ("blk.0.attn_k.weight", [dim, hd * kv], 0, f32s(dim * hd * kv, 4)),
          ("blk.0.attn_v.weight", [dim, hd * kv], 0, f32s(dim * hd * kv, 5)),
          ("blk.0.attn_output.weight", [dim, dim], 0, f32s(dim * dim, 6)),
          ("blk.0.attn_norm.weight", [dim], 0, f32s(dim, 7)),
          ("blk.0.ffn_gate.weight", [dim, ff], 0, f32s(dim * ff, 8)),
          ("blk.0.ffn_down.weight", [ff, dim], 0, f32s(dim * ff, 9)),
          ("blk.0.ffn_up.weight", [dim, ff], 0, f32s(dim * ff, 10)),
          ("blk.0.ffn_norm.weight", [dim], 0, f32s(dim, 11))]
    return gguf(kvs, t)


def gguf_seeds():
    put("gguf_reader", "empty-v3", gguf([], []))
    put("gguf_reader", "empty-v2", gguf([], [], version=2))
    every = [("u8", U8, 7), ("i8", I8, -7), ("u16", U16, 700), ("i16", I16, -700), ("u32", U32, 70000),
             ("i32", I32, -70000), ("f32", F32, 1.5), ("bool", BOOL, True), ("str", STR, "h\u00e9llo"),
             ("u64", U64, 1 << 40), ("i64", I64, -(1 << 40)), ("f64", F64, 2.25),
             ("arr.u8", ARR, (U8, [1, 2, 3])), ("arr.str", ARR, (STR, ["a", "", "\u4e16"])),
             ("arr.f64", ARR, (F64, [0.5])), ("arr.arr", ARR, (ARR, [(I32, [1, 2]), (STR, ["x"])])),
             ("general.alignment", U32, 64)]
    put("gguf_reader", "every-type", gguf(every, [("t", [4, 2], 0, f32s(8))], alignment=64))
    # Quantized tensor types: Q8_0 (8), Q4_0 (2), Q4_K (12), one block each; and a 4-d F16 tensor.
    put("gguf_reader", "quant-types",
        gguf([("general.architecture", STR, "llama")],
             [("q8", [32], 8, b"\0\x3c" + bytes(range(32))), ("q4", [32], 2, b"\0\x3c" + bytes(16)),
              ("q4k", [256], 12, bytes(144)), ("f16", [2, 1, 1, 2], 1, b"\0\x3c" * 4)]))
    put("gguf_reader", "tiny-llama", tiny_llama())
    put("gguf_reader", "tiny-llama-tied-mha", tiny_llama(gqa=False, tied=True))
    bpe_tokens = ["a", "b", "c", "ab", "abc", "\u0120", "\u0120a", "<|endoftext|>"] + ["\u010a"]
    put("gguf_reader", "gpt2-vocab",
        gguf([("general.architecture", STR, "llama"), ("tokenizer.ggml.model", STR, "gpt2"),
              ("tokenizer.ggml.pre", STR, "llama-bpe"), ("tokenizer.ggml.tokens", ARR, (STR, bpe_tokens)),
              ("tokenizer.ggml.token_type", ARR, (I32, [1] * 7 + [3, 1])),
              ("tokenizer.ggml.merges", ARR, (STR, ["a b", "ab c", "\u0120 a"])),
              ("tokenizer.ggml.bos_token_id", U32, 7), ("tokenizer.ggml.eos_token_id", U32, 7),
              ("tokenizer.chat_template", STR, "{% for m in messages %}{{ m.content }}{% endfor %}")], []))


# ---------------------------------------------------------------- llama2.c
def l2c_tokenizer(n):
    out = struct.pack("<i", 8)
    for i in range(n):
        if i == 0:
            p = b"<unk>"
        elif i == 1:
            p = b"\n<s>\n"
        elif i == 2:
            p = b"\n</s>\n"
        elif i < 19:
            p = b"<0x%02X>" % (i - 3)
        else:
            p = ((b" " if i % 2 else b"") + bytes([97 + i % 26]) + b"e" * (i % 3))
        out += struct.pack("<fi", -float(i), len(p)) + p
    return out


def l2c_checkpoint(vocab, separate=False, gqa=False, dim=4, hidden=8, layers=1, heads=2, seq_len=8):
    kv = 1 if gqa else heads
    hs = dim // heads
    kvd = hs * kv
    out = struct.pack("<7i", dim, hidden, layers, heads, kv, -vocab if separate else vocab, seq_len)
    count = vocab * dim + layers * (2 * dim + 2 * dim * dim + 2 * kvd * dim + 3 * hidden * dim) + dim + seq_len * hs
    if separate:
        count += vocab * dim
    return out + f32s(count)


def llama2c_seeds():
    put("llama2c_checkpoint", "vocab20", l2c_checkpoint(20))
    put("llama2c_checkpoint", "vocab20-separate-classifier", l2c_checkpoint(20, separate=True))
    put("llama2c_checkpoint", "vocab24-gqa", l2c_checkpoint(24, gqa=True))
    put("llama2c_checkpoint", "vocab3-two-layers", l2c_checkpoint(3, layers=2))
    put("llama2c_checkpoint", "header-only", l2c_checkpoint(20)[:28])
    for n in (1, 3, 5, 20, 40, 64):
        put("llama2c_tokenizer", "vocab%d" % n, bytes([(n - 1) % 64]) + l2c_tokenizer(n))
    put("llama2c_tokenizer", "vocab20-truncated", bytes([19]) + l2c_tokenizer(20)[:-3])


# ---------------------------------------------------------------- tokenizer + detokenizer
TEXTS = ["Hello world", " leading space", "Once upon a time, there was a cat.", "\u4e16\u754c \U0001f600 caf\u00e9",
         "<s> special </s> <|endoftext|> <|im_start|>user\n<|eot_id|>", "tabs\tand\nnewlines\r\n  multiple   spaces",
         "123456789 3.14 1,000", "I'm don't we'll 'quotes' \"double\"", "\u0628\u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u0939\u093f\u0928\u094d\u0926\u0940",
         "  \u2581\u2581 already-marked \u2581spaces", ""]


def tokenizer_seeds():
    for i, t in enumerate(TEXTS):
        for v in range(8):
            if (i + v) % 3 == 0:
                put("tokenizer", "text%d-vocab%d" % (i, v), bytes([v | (0x30 if i % 2 else 0)]) + t.encode())
    put("tokenizer", "invalid-utf8", b"\x00" + b"ok \xff\xfe \xc3 \xe4\xb8 \xed\xa0\x80 \xf4\x90\x80\x80 end")
    put("tokenizer", "invalid-utf8-bpe", b"\x03" + b"\xc0\xaf \x80\x80 caf\xc3\xa9\xe2\x82")
    put("tokenizer", "ids-decode", b"\x85" + bytes(range(0, 200)))
    for v in range(8):
        put("incremental_detokenizer", "bytes-vocab%d" % v, bytes([v | (0x10 if v % 2 else 0)]) +
            b"".join(struct.pack("<H", x) for x in [3, 0xe4 + 3, 0xb8 + 3, 0x96 + 3, 1, 2, 300, 0x8000 | 40000, 259, 5]))


# ---------------------------------------------------------------- chat templates
CONVERSATIONS = [
    [{"role": "user", "content": "Hi"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
     {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Bye"}],
    [{"role": "user", "content": "Weather?"},
     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
     {"role": "tool", "tool_call_id": "c1", "content": "21C"}],
    [{"role": "user", "content": [{"type": "text", "text": "parts"}]},
     {"role": "assistant", "content": "ok", "reasoning_content": "thinking..."}],
    [{"role": "wizard", "content": 5}, {"content": "no role"}, "not an object"],
]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "w",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def chat_seeds():
    for i, conv in enumerate(CONVERSATIONS):
        for t in range(0, 81, 9):
            body = {"messages": conv}
            if i == 2:
                body["tools"] = TOOLS
            if t % 2:
                body["chat_template_kwargs"] = {"enable_thinking": t % 4 == 1}
            put("chat_template", "conv%d-template%d" % (i, t), bytes([t, 1]) + json.dumps(body).encode())
    put("chat_template", "bare-list", bytes([20, 0]) + json.dumps(CONVERSATIONS[1]).encode())
    templates = [
        "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}",
        "{{ bos_token }}{% for m in messages %}{% if m.role == 'system' %}[SYS]{{ m.content | trim }}{% elif m.tool_calls %}"
        "{% for c in m.tool_calls %}{{ c.function.name }}({{ c.function.arguments | tojson }}){% endfor %}"
        "{% else %}{{ m.role | upper }}: {{ m.content }}{% endif %}{% if not loop.last %}\n{% endif %}{% endfor %}{{ eos_token }}",
        "{%- set ns = namespace(found=false) -%}{%- for m in messages -%}{%- if m.role == 'tool' -%}{%- set ns.found = true -%}"
        "{%- endif -%}{%- endfor -%}{{ ns.found }}{% if tools %}{{ tools | tojson(indent=2) }}{% endif %}",
        "{% macro render(x, depth=0) %}{% if x is mapping %}{% for k, v in x.items() %}{{ k }}={{ render(v, depth + 1) }};"
        "{% endfor %}{% elif x is string %}'{{ x }}'{% else %}{{ x }}{% endif %}{% endmacro %}"
        "{% for m in messages %}{{ render(m) }}{% endfor %}",
        "{{ messages | map(attribute='role') | join(', ') }} {{ messages[1:3] | length }} {{ (messages | last).content[:5] }}"
        " {{ 'a,b'.split(',') }} {{ range(3) | list }} {{ '%s' if true else 'x' }} {{ 7 // 2 }} {{ 2 ** 3 }} {{ 'x' ~ 1 }}",
        "{% if enable_thinking is defined and enable_thinking %}<think>{% endif %}{{ strftime_now('%d %b %Y') }}"
        "{% for m in messages|selectattr('role', 'equalto', 'user') %}{{ m.content|string|replace('a', 'b') }}{% endfor %}"
        "{% generation %}x{% endgeneration %}{{ raise_exception('stop') if messages|length > 99 }}",
        "{% for i in range(3) %}{% if i == 1 %}{% continue %}{% endif %}{{ loop.index }}{{ loop.revindex }}{% endfor %}"
        "{# comment #}{% raw %}{{ not rendered }}{% endraw %}{% filter upper %}text{% endfilter %}",
    ]
    for i, t in enumerate(templates):
        put("jinja_template", "template%d" % i, bytes([i % 8]) + t.encode())


# ---------------------------------------------------------------- OpenAI requests
def request_seeds():
    completions = [
        {"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 16, "temperature": 0.7, "top_p": 0.9,
         "n": 2, "stream": True, "stream_options": {"include_usage": True}, "stop": ["\n", "end"], "seed": 42,
         "presence_penalty": 0.5, "frequency_penalty": -0.5, "logit_bias": {"1": -100, "50": 5}, "logprobs": 3,
         "user": "u", "top_k": 40, "min_p": 0.05, "repetition_penalty": 1.1, "min_tokens": 2, "ignore_eos": False},
        {"prompt": [1, 2, 3, 400], "max_tokens": 4},
        {"prompt": ["a", "b"], "best_of": 2, "echo": True},
        {"prompt": [[1, 2], [3]], "max_tokens": None, "stop": "x"},
        {"prompt": "json", "response_format": {"type": "json_object"}},
        {"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"name": "s", "strict": True,
         "schema": {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}, "required": ["a"]}}}},
        {"prompt": "x", "guided_regex": "[a-z]{1,5}@[a-z]+\\.com"},
        {"prompt": "x", "guided_choice": ["yes", "no"]},
        {"prompt": "x", "guided_grammar": "root ::= \"a\" | \"b\" root"},
        {"prompt": "x", "grammar": "root ::= [0-9]+"},
        {"prompt": "x", "structured_outputs": {"json": {"type": "array", "items": {"type": "string"}, "maxItems": 3}}},
        {"prompt": "x", "guided_json": {"enum": [1, "two", None]}},
        {"prompt": "x", "max_tokens": -1, "n": 0, "temperature": "hot", "logit_bias": {"99999": 1}},
    ]
    chats = [
        {"model": "stories260K", "messages": CONVERSATIONS[1], "max_completion_tokens": 8, "logprobs": True,
         "top_logprobs": 2, "stream": True, "chat_template_kwargs": {"enable_thinking": False}},
        {"messages": CONVERSATIONS[2], "tools": TOOLS, "tool_choice": "auto", "parallel_tool_calls": True},
        {"messages": CONVERSATIONS[0], "tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
        {"messages": CONVERSATIONS[0], "tools": TOOLS, "tool_choice": "required", "response_format": {"type": "json_object"}},
        {"messages": CONVERSATIONS[3], "reasoning_effort": "low", "stop": None},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}}]}]},
        {"messages": []},
    ]
    for i, body in enumerate(completions):
        put("openai_request", "completion%d" % i, bytes([i % 3 | ((i % 8) << 3), i]) + json.dumps(body).encode())
    for i, body in enumerate(chats):
        put("openai_request", "chat%d" % i, bytes([3 + i % 3 | ((i % 8) << 3), i * 37]) + json.dumps(body).encode())
    put("openai_request", "tokenize", bytes([6, 0]) + json.dumps({"prompt": "hi", "add_special_tokens": False}).encode())
    put("openai_request", "tokenize-chat", bytes([6, 0]) + json.dumps({"messages": CONVERSATIONS[1], "add_generation_prompt": True}).encode())
    put("openai_request", "detokenize", bytes([7, 0]) + json.dumps({"tokens": [1, 2, 300, 511]}).encode())


# ---------------------------------------------------------------- structured
SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 20},
     "age": {"type": "integer", "minimum": 0, "maximum": 150}, "email": {"type": "string", "format": "email"},
     "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 4}},
     "required": ["name"], "additionalProperties": False},
    {"$defs": {"node": {"type": "object", "properties": {"value": {"type": "number"},
     "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "$ref": "#/$defs/node"},
    {"anyOf": [{"type": "string", "pattern": "^[A-Z]{3}-\\d{2}$"}, {"type": "null"}, {"const": {"k": [1, 2]}}]},
    {"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}}, "required": ["kind"]},
               {"type": "object", "properties": {"kind": {"const": "b"}, "x": {"type": "boolean"}}, "required": ["kind", "x"]}]},
    {"allOf": [{"properties": {"a": {"type": "integer"}}}, {"properties": {"b": {"enum": ["x", "y"]}}, "required": ["b"]}]},
    {"type": "number", "exclusiveMinimum": -1.5, "maximum": 100.25},
    {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string", "format": "date-time"}], "items": False},
    {"type": "object", "patternProperties": {"^x_[a-z]+$": {"type": "integer"}}, "additionalProperties": False},
    {"type": ["string", "integer"], "format": "uuid"},
    {"definitions": {"a": {"type": "string"}}, "properties": {"p~1q": {"$ref": "#/definitions/a"}}, "minProperties": 1},
    {"type": "string", "format": "ipv6"},
    {"not": {"type": "string"}},
    True,
]


def structured_seeds():
    for i, s in enumerate(SCHEMAS):
        put("json_schema", "schema%d" % i, bytes([i % 2]) + json.dumps(s).encode())
    put("json_schema", "schema0-sample", b"\x00" + json.dumps(SCHEMAS[0]).encode() + b"\x00" +
        b'{"name": "Ann", "age": 30, "tags": ["a"]}')
    grammars = [
        'root ::= "hello" | "world"',
        'root ::= object\nobject ::= "{" ws (pair ("," ws pair)*)? "}"\npair ::= string ":" ws value\n'
        'value ::= object | string | [0-9]+ | "true" | "false" | "null"\n'
        'string ::= "\\"" ([^"\\\\] | "\\\\" ["\\\\/bfnrt])* "\\""\nws ::= [ \\t\\n]*',
        '# comment\nroot ::= (item ws)+\nitem ::= [a-zA-Z_] [a-zA-Z0-9_]{0,7} | "\\x41" | "\\u00e9" | "\\U0001F600"\nws ::= " "?',
        'root ::= line{2,4}\nline ::= [^\\n]* "\\n"',
        'root ::= (\n  "a"\n  | "b" root\n)',
        'root ::= .{3} [\\]\\-\\\\] [^a-c\\x00-\\x1f]',
        'root ::= x\nx ::= x "a"',
        'root ::= undefined-rule',
    ]
    samples = ["hello", '{"a": 1}', "abc def ", "x\ny\n", "bbba", "abc]z", "", ""]
    for i, g in enumerate(grammars):
        put("gbnf_parser", "grammar%d" % i, g.encode() + b"\x00" + samples[i].encode())
    patterns = ["^[a-z]+@[a-z]+\\.com$", "\\d{3}-\\d{4}", "(?:ab|cd)*e?", "(?<year>\\d{4})-(0[1-9]|1[0-2])",
                "[^\\s\\W]+\\x41\\u00e9\\u{1F600}\\cJ", ".*", "a{2,}b{,3}c{1}", "[\\]\\-\\\\^]", "(a|)+", "\\bword\\b",
                "(?=x)", "\\p{L}", "^x$|^y"]
    for i, p in enumerate(patterns):
        put("regex", "pattern%d" % i, bytes([i % 8]) + p.encode() + b"\x00" + b"abc@def.com")


# ---------------------------------------------------------------- tool-call output
def tool_seeds():
    outputs = {
        0: ['<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
            'text <tool_call>{"name": "f", "arguments": "{\\"x\\": 1}"}</tool_call> between <tool_call>{"name": "g"}</tool_call>',
            '<tool_call>{"name": broken</tool_call>'],
        1: ['<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n'
            '</function>\n</tool_call>', '<tool_call>\n<function=f>\n<parameter=x>\nTrue\n</function>\n</tool_call>'],
        2: ['<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}',
            '{"type": "function", "name": "f", "arguments": {"x": 1}}; {"name": "g", "parameters": {}}'],
        3: ['[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abc123xyz"}]',
            '[TOOL_CALLS]{"name": "f", "arguments": {}}'],
        4: ['[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]f[CALL_ID]id1[ARGS]{"x": 2}'],
        5: ['{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}',
            '{"tool_call": {"name": "f", "arguments": {"x": 1}}}', '{"response": "plain text"}'],
        6: ["just content with <think> tags </think> and unicode \u4e16\u754c"],
    }
    for fmt, texts in outputs.items():
        for i, t in enumerate(texts):
            put("tool_call_parser", "format%d-%d" % (fmt, i), bytes([fmt, i * 13]) + t.encode())
            put("tool_call_parser", "format%d-%d-think" % (fmt, i),
                bytes([fmt | 0x10, i * 7 + 1]) + ("<think>reasoning \u00e9</think>\n\n" + t).encode())
    put("tool_call_parser", "starts-in-reasoning", bytes([0x30, 5]) + b"still thinking</think><tool_call>{\"name\": \"f\"}</tool_call>")


if __name__ == "__main__":
    gguf_seeds()
    llama2c_seeds()
    tokenizer_seeds()
    chat_seeds()
    request_seeds()
    structured_seeds()
    tool_seeds()
