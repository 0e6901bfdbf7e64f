// Chat templates: each family recognized from real Jinja sources, rendered byte for byte like its
// official template, the model's template chosen from a GGUF file, prompts encoded with exactly one BOS,
// and clear errors for what we do not render.
//
// The golden strings were rendered from the official templates below (ChatML's: the one in the shared
// qwen2-f16.gguf) by Jinja2 3.1 with transformers' settings (trim_blocks, lstrip_blocks), bos_token and
// eos_token as in each model's tokenizer_config.json.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/gguf.h"
#include "test_helpers.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace nucleus {
namespace {

using test::shared_path;

// ---- Official templates (Jinja source as published in each model's tokenizer_config.json) ----

// meta-llama/Llama-2-7b-chat-hf
constexpr const char* kLlama2Chat = R"jinja({% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %})jinja";
// meta-llama/Meta-Llama-3-8B-Instruct
constexpr const char* kLlama3Instruct = R"jinja({% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>

'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>

' }}{% endif %})jinja";
// mistralai cookbook: the v1 template with a system prompt (Mistral-7B-Instruct-v0.2)
constexpr const char* kMistralV1 = R"jinja({%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('After the optional system message, conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message['role'] == 'user' %}
        {%- if loop.first and system_message is defined %}
            {{- ' [INST] ' + system_message + '\n\n' + message['content'] + ' [/INST]' }}
        {%- else %}
            {{- ' [INST] ' + message['content'] + ' [/INST]' }}
        {%- endif %}
    {%- elif message['role'] == 'assistant' %}
        {{- ' ' + message['content'] + eos_token}}
    {%- else %}
        {{- raise_exception('Only user and assistant roles are supported, with the exception of an initial optional system message!') }}
    {%- endif %}
{%- endfor %}
)jinja";
// mistralai/Mistral-Large-Instruct-2407 (v3, as Mistral-7B-Instruct-v0.3)
constexpr const char* kMistralV3 = R"jinja({%- if messages[0]["role"] == "system" %}
    {%- set system_message = messages[0]["content"] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}

{#- This block checks for alternating user/assistant messages, skipping tool calling messages #}
{%- set ns = namespace() %}
{%- set ns.index = 0 %}
{%- for message in loop_messages %}
    {%- if not (message.role == "tool" or message.role == "tool_results" or (message.tool_calls is defined and message.tool_calls is not none)) %}
        {%- if (message["role"] == "user") != (ns.index % 2 == 0) %}
            {{- raise_exception("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...") }}
        {%- endif %}
        {%- set ns.index = ns.index + 1 %}
    {%- endif %}
{%- endfor %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message["role"] == "user" %}
        {%- if tools is not none and (message == user_messages[-1]) %}
            {{- "[AVAILABLE_TOOLS] [" }}
            {%- for tool in tools %}
                {%- set tool = tool.function %}
                {{- '{"type": "function", "function": {' }}
                {%- for key, val in tool.items() if key != "return" %}
                    {%- if val is string %}
                        {{- '"' + key + '": "' + val + '"' }}
                    {%- else %}
                        {{- '"' + key + '": ' + val|tojson }}
                    {%- endif %}
                    {%- if not loop.last %}
                        {{- ", " }}
                    {%- endif %}
                {%- endfor %}
                {{- "}}" }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- else %}
                    {{- "]" }}
                {%- endif %}
            {%- endfor %}
            {{- "[/AVAILABLE_TOOLS]" }}
            {%- endif %}
        {%- if loop.last and system_message is defined %}
            {{- "[INST] " + system_message + "\n\n" + message["content"] + "[/INST]" }}
        {%- else %}
            {{- "[INST] " + message["content"] + "[/INST]" }}
        {%- endif %}
    {%- elif message.tool_calls is defined and message.tool_calls is not none %}
        {{- "[TOOL_CALLS] [" }}
        {%- for tool_call in message.tool_calls %}
            {%- set out = tool_call.function|tojson %}
            {{- out[:-1] }}
            {%- if not tool_call.id is defined or tool_call.id|length != 9 %}
                {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
            {%- endif %}
            {{- ', "id": "' + tool_call.id + '"}' }}
            {%- if not loop.last %}
                {{- ", " }}
            {%- else %}
                {{- "]" + eos_token }}
            {%- endif %}
        {%- endfor %}
    {%- elif message["role"] == "assistant" %}
        {{- " " + message["content"]|trim + eos_token}}
    {%- elif message["role"] == "tool_results" or message["role"] == "tool" %}
        {%- if message.content is defined and message.content.content is defined %}
            {%- set content = message.content.content %}
        {%- else %}
            {%- set content = message.content %}
        {%- endif %}
        {{- '[TOOL_RESULTS] {"content": ' + content|string + ", " }}
        {%- if not message.tool_call_id is defined or message.tool_call_id|length != 9 %}
            {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
        {%- endif %}
        {{- '"call_id": "' + message.tool_call_id + '"}[/TOOL_RESULTS]' }}
    {%- else %}
        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}
    {%- endif %}
{%- endfor %}
)jinja";
// mistralai/Mistral-Nemo-Instruct-2407 (v3-tekken)
constexpr const char* kMistralNemo = R"jinja({%- if messages[0]["role"] == "system" %}
    {%- set system_message = messages[0]["content"] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}

{#- This block checks for alternating user/assistant messages, skipping tool calling messages #}
{%- set ns = namespace() %}
{%- set ns.index = 0 %}
{%- for message in loop_messages %}
    {%- if not (message.role == "tool" or message.role == "tool_results" or (message.tool_calls is defined and message.tool_calls is not none)) %}
        {%- if (message["role"] == "user") != (ns.index % 2 == 0) %}
            {{- raise_exception("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...") }}
        {%- endif %}
        {%- set ns.index = ns.index + 1 %}
    {%- endif %}
{%- endfor %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message["role"] == "user" %}
        {%- if tools is not none and (message == user_messages[-1]) %}
            {{- "[AVAILABLE_TOOLS][" }}
            {%- for tool in tools %}
                {%- set tool = tool.function %}
                {{- '{"type": "function", "function": {' }}
                {%- for key, val in tool.items() if key != "return" %}
                    {%- if val is string %}
                        {{- '"' + key + '": "' + val + '"' }}
                    {%- else %}
                        {{- '"' + key + '": ' + val|tojson }}
                    {%- endif %}
                    {%- if not loop.last %}
                        {{- ", " }}
                    {%- endif %}
                {%- endfor %}
                {{- "}}" }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- else %}
                    {{- "]" }}
                {%- endif %}
            {%- endfor %}
            {{- "[/AVAILABLE_TOOLS]" }}
            {%- endif %}
        {%- if loop.last and system_message is defined %}
            {{- "[INST]" + system_message + "\n\n" + message["content"] + "[/INST]" }}
        {%- else %}
            {{- "[INST]" + message["content"] + "[/INST]" }}
        {%- endif %}
    {%- elif (message.tool_calls is defined and message.tool_calls is not none) %}
        {{- "[TOOL_CALLS][" }}
        {%- for tool_call in message.tool_calls %}
            {%- set out = tool_call.function|tojson %}
            {{- out[:-1] }}
            {%- if not tool_call.id is defined or tool_call.id|length != 9 %}
                {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
            {%- endif %}
            {{- ', "id": "' + tool_call.id + '"}' }}
            {%- if not loop.last %}
                {{- ", " }}
            {%- else %}
                {{- "]" + eos_token }}
            {%- endif %}
        {%- endfor %}
    {%- elif message["role"] == "assistant" %}
        {{- message["content"] + eos_token}}
    {%- elif message["role"] == "tool_results" or message["role"] == "tool" %}
        {%- if message.content is defined and message.content.content is defined %}
            {%- set content = message.content.content %}
        {%- else %}
            {%- set content = message.content %}
        {%- endif %}
        {{- '[TOOL_RESULTS]{"content": ' + content|string + ", " }}
        {%- if not message.tool_call_id is defined or message.tool_call_id|length != 9 %}
            {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
        {%- endif %}
        {{- '"call_id": "' + message.tool_call_id + '"}[/TOOL_RESULTS]' }}
    {%- else %}
        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}
    {%- endif %}
{%- endfor %}
)jinja";
// microsoft/Phi-3.5-mini-instruct
constexpr const char* kPhi35Mini = R"jinja({% for message in messages %}{% if message['role'] == 'system' and message['content'] %}{{'<|system|>
' + message['content'] + '<|end|>
'}}{% elif message['role'] == 'user' %}{{'<|user|>
' + message['content'] + '<|end|>
'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>
' + message['content'] + '<|end|>
'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>
' }}{% else %}{{ eos_token }}{% endif %})jinja";
// HuggingFaceH4/zephyr-7b-beta
constexpr const char* kZephyrBeta = R"jinja({% for message in messages %}
{% if message['role'] == 'user' %}
{{ '<|user|>
' + message['content'] + eos_token }}
{% elif message['role'] == 'system' %}
{{ '<|system|>
' + message['content'] + eos_token }}
{% elif message['role'] == 'assistant' %}
{{ '<|assistant|>
'  + message['content'] + eos_token }}
{% endif %}
{% if loop.last and add_generation_prompt %}
{{ '<|assistant|>' }}
{% endif %}
{% endfor %})jinja";
// google/gemma-3-1b-it
constexpr const char* kGemma3 = R"jinja({{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\n'}}
{%- endif -%}
)jinja";
// deepseek-ai/deepseek-coder-33b-instruct
constexpr const char* kDeepSeekCoder = R"jinja({% if not add_generation_prompt is defined %}
{% set add_generation_prompt = false %}
{% endif %}
{%- set ns = namespace(found=false) -%}
{%- for message in messages -%}
    {%- if message['role'] == 'system' -%}
        {%- set ns.found = true -%}
    {%- endif -%}
{%- endfor -%}
{{bos_token}}{%- if not ns.found -%}
{{'You are an AI programming assistant, utilizing the Deepseek Coder model, developed by Deepseek Company, and you only answer questions related to computer science. For politically sensitive questions, security and privacy issues, and other non-computer science questions, you will refuse to answer\n'}}
{%- endif %}
{%- for message in messages %}
    {%- if message['role'] == 'system' %}
{{ message['content'] }}
    {%- else %}
        {%- if message['role'] == 'user' %}
{{'### Instruction:\n' + message['content'] + '\n'}}
        {%- else %}
{{'### Response:\n' + message['content'] + '\n<|EOT|>\n'}}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{% if add_generation_prompt %}
{{'### Response:'}}
{% endif %})jinja";
// deepseek-ai/DeepSeek-V2-Chat (and deepseek-llm-7b-chat)
constexpr const char* kDeepSeekV2 = R"jinja({% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ 'User: ' + message['content'] + '

' }}{% elif message['role'] == 'assistant' %}{{ 'Assistant: ' + message['content'] + eos_token }}{% elif message['role'] == 'system' %}{{ message['content'] + '

' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %})jinja";
// deepseek-ai/DeepSeek-V3
constexpr const char* kDeepSeekV3 = R"jinja({% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}{% set ns = namespace(is_first=false, is_tool=false, is_output_first=true, system_prompt='', is_first_sp=true) %}{%- for message in messages %}{%- if message['role'] == 'system' %}{%- if ns.is_first_sp %}{% set ns.system_prompt = ns.system_prompt + message['content'] %}{% set ns.is_first_sp = false %}{%- else %}{% set ns.system_prompt = ns.system_prompt + '\n\n' + message['content'] %}{%- endif %}{%- endif %}{%- endfor %}{{ bos_token }}{{ ns.system_prompt }}{%- for message in messages %}{%- if message['role'] == 'user' %}{%- set ns.is_tool = false -%}{{'<｜User｜>' + message['content']}}{%- endif %}{%- if message['role'] == 'assistant' and message['content'] is none %}{%- set ns.is_tool = false -%}{%- for tool in message['tool_calls'] %}{%- if not ns.is_first %}{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\n' + '```json' + '\n' + tool['function']['arguments'] + '\n' + '```' + '<｜tool▁call▁end｜>'}}{%- set ns.is_first = true -%}{%- else %}{{'\n' + '<｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\n' + '```json' + '\n' + tool['function']['arguments'] + '\n' + '```' + '<｜tool▁call▁end｜>'}}{{'<｜tool▁calls▁end｜><｜end▁of▁sentence｜>'}}{%- endif %}{%- endfor %}{%- endif %}{%- if message['role'] == 'assistant' and message['content'] is not none %}{%- if ns.is_tool %}{{'<｜tool▁outputs▁end｜>' + message['content'] + '<｜end▁of▁sentence｜>'}}{%- set ns.is_tool = false -%}{%- else %}{{'<｜Assistant｜>' + message['content'] + '<｜end▁of▁sentence｜>'}}{%- endif %}{%- endif %}{%- if message['role'] == 'tool' %}{%- set ns.is_tool = true -%}{%- if ns.is_output_first %}{{'<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>'}}{%- set ns.is_output_first = false %}{%- else %}{{'\n<｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>'}}{%- endif %}{%- endif %}{%- endfor -%}{% if ns.is_tool %}{{'<｜tool▁outputs▁end｜>'}}{% endif %}{% if add_generation_prompt and not ns.is_tool %}{{'<｜Assistant｜>'}}{% endif %})jinja";
// google/gemma-7b-it
constexpr const char* kGemma7b = R"jinja({% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '
' + message['content'] | trim + '<end_of_turn>
' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model
'}}{% endif %})jinja";
// mistralai/Mistral-7B-Instruct-v0.1 (the original, without a system prompt)
constexpr const char* kMistral7bV01 = R"jinja({{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %})jinja";
// microsoft/Phi-3-small-8k-instruct
constexpr const char* kPhi3Small = R"jinja({{ bos_token }}{% for message in messages %}{{'<|' + message['role'] + '|>' + '
' + message['content'] + '<|end|>
' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>
' }}{% else %}{{ eos_token }}{% endif %})jinja";
// HuggingFaceTB/SmolLM2-135M-Instruct
constexpr const char* kSmolLM2 = R"jinja({% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system
You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>
' }}{% endif %}{{'<|im_start|>' + message['role'] + '
' + message['content'] + '<|im_end|>' + '
'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant
' }}{% endif %})jinja";
// Qwen/Qwen2.5-7B-Instruct
constexpr const char* kQwen25 = R"jinja({%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
)jinja";
// microsoft/phi-4 (no family renderer: <|im_sep|>; the Jinja interpreter renders it)
constexpr const char* kPhi4 = R"jinja({% for message in messages %}{% if (message['role'] == 'system') %}{{'<|im_start|>system<|im_sep|>' + message['content'] + '<|im_end|>'}}{% elif (message['role'] == 'user') %}{{'<|im_start|>user<|im_sep|>' + message['content'] + '<|im_end|><|im_start|>assistant<|im_sep|>'}}{% elif (message['role'] == 'assistant') %}{{message['content'] + '<|im_end|>'}}{% endif %}{% endfor %})jinja";
// mistralai/Mistral-Large-Instruct-2411 (not rendered: [SYSTEM_PROMPT])
constexpr const char* kMistralV7 = R"jinja({{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + '[/INST]' }}{% elif message['role'] == 'system' %}{{ '[SYSTEM_PROMPT] ' + message['content'] + '[/SYSTEM_PROMPT]' }}{% elif message['role'] == 'assistant' %}{{ ' ' + message['content'] + eos_token }}{% else %}{{ raise_exception('Only user, system and assistant roles are supported!') }}{% endif %}{% endfor %})jinja";
// CohereForAI/c4ai-command-r-plus (not rendered)
constexpr const char* kCommandR = R"jinja({{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% elif false == true %}{% set loop_messages = messages %}{% set system_message = 'You are Command-R, a brilliant, sophisticated, AI-assistant trained to assist human users by providing thorough responses. You are trained by Cohere.' %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% if system_message != false %}{{ '<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>' + system_message + '<|END_OF_TURN_TOKEN|>' }}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% set content = message['content'] %}{% if message['role'] == 'user' %}{{ '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + content.strip() + '<|END_OF_TURN_TOKEN|>' }}{% elif message['role'] == 'assistant' %}{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>'  + content.strip() + '<|END_OF_TURN_TOKEN|>' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>' }}{% endif %})jinja";
// THUDM/glm-edge-1.5b-chat (not rendered: <|user|> without EOS)
constexpr const char* kGlmEdge = R"jinja({% for item in messages %}{% if item['role'] == 'system' %}<|system|>
{{ item['content'] }}{% elif item['role'] == 'user' %}<|user|>
{{ item['content'] }}{% elif item['role'] == 'assistant' %}<|assistant|>
{{ item['content'] }}{% endif %}{% endfor %}<|assistant|>)jinja";
// A ChatML template without a built-in system message (teknium/OpenHermes-2.5-Mistral-7B).
constexpr const char* kOpenHermes =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + "
    "'\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

std::string template_of(const std::string& relative_path) {
  return GgufFile::open(shared_path(relative_path))->get_string("tokenizer.chat_template");
}

const Tokenizer& tokenizer_of(const std::string& relative_path) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  std::unique_ptr<Tokenizer>& slot = cache[relative_path];
  if (!slot) slot = Tokenizer::from_gguf(*GgufFile::open(shared_path(relative_path)));
  return *slot;
}

// ---- Golden renders: system + two user turns + generation prompt, per family ----

const std::vector<ChatMessage> kConversation = {
    {"system", "You are a helpful assistant."},
    {"user", "Hello!"},
    {"assistant", "Hi there. How can I help?"},
    {"user", "What is 2 + 2?"},
};
// Whitespace around every message shows which families trim what.
const std::vector<ChatMessage> kPaddedConversation = {
    {"system", "  Be brief.\n"},
    {"user", " Hi "},
    {"assistant", "\tHello!  "},
    {"user", "\nBye\n\n"},
};
const std::vector<ChatMessage> kNoSystem = {{"user", "Hello!"}};
const std::vector<ChatMessage> kEndsWithAnswer = {
    {"system", "You are a helpful assistant."},
    {"user", "Hello!"},
    {"assistant", "Hi there. How can I help?"},
};

struct GoldenCase {
  ChatTemplateKind kind;
  const char* conversation;      // kConversation, with the generation prompt
  const char* padded;            // kPaddedConversation, with the generation prompt
  const char* no_system;         // kNoSystem, with the generation prompt
  const char* ends_with_answer;  // kEndsWithAnswer, without the generation prompt
};

// gtest prints a failing parameter with this: the family's name rather than the struct's bytes.
void PrintTo(const GoldenCase& golden, std::ostream* os) { *os << chat_template_name(golden.kind); }

const GoldenCase kGoldenCases[] = {
    {ChatTemplateKind::chatml,
     "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\nHi there. How can I help?<|im_end|>\n<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n",
     "<|im_start|>system\n  Be brief.\n<|im_end|>\n<|im_start|>user\n Hi <|im_end|>\n<|im_start|>assistant\n\tHello!  <|im_end|>\n<|im_start|>user\n\nBye\n\n<|im_end|>\n<|im_start|>assistant\n",
     "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
     "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\nHi there. How can I help?<|im_end|>\n"},
    {ChatTemplateKind::llama2,
     "<s>[INST] <<SYS>>\nYou are a helpful assistant.\n<</SYS>>\n\nHello! [/INST] Hi there. How can I help? </s><s>[INST] What is 2 + 2? [/INST]",
     "<s>[INST] <<SYS>>\n  Be brief.\n\n<</SYS>>\n\n Hi [/INST] Hello! </s><s>[INST] Bye [/INST]",
     "<s>[INST] Hello! [/INST]",
     "<s>[INST] <<SYS>>\nYou are a helpful assistant.\n<</SYS>>\n\nHello! [/INST] Hi there. How can I help? </s>"},
    {ChatTemplateKind::llama3,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there. How can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2 + 2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
     "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there. How can I help?<|eot_id|>"},
    {ChatTemplateKind::mistral_v1,
     "<s> [INST] You are a helpful assistant.\n\nHello! [/INST] Hi there. How can I help?</s> [INST] What is 2 + 2? [/INST]",
     "<s> [INST]   Be brief.\n\n\n Hi  [/INST] \tHello!  </s> [INST] \nBye\n\n [/INST]",
     "<s> [INST] Hello! [/INST]",
     "<s> [INST] You are a helpful assistant.\n\nHello! [/INST] Hi there. How can I help?</s>"},
    {ChatTemplateKind::mistral_v3,
     "<s>[INST] Hello![/INST] Hi there. How can I help?</s>[INST] You are a helpful assistant.\n\nWhat is 2 + 2?[/INST]",
     "<s>[INST]  Hi [/INST] Hello!</s>[INST]   Be brief.\n\n\n\nBye\n\n[/INST]",
     "<s>[INST] Hello![/INST]",
     "<s>[INST] Hello![/INST] Hi there. How can I help?</s>"},
    {ChatTemplateKind::mistral_v3_tekken,
     "<s>[INST]Hello![/INST]Hi there. How can I help?</s>[INST]You are a helpful assistant.\n\nWhat is 2 + 2?[/INST]",
     "<s>[INST] Hi [/INST]\tHello!  </s>[INST]  Be brief.\n\n\n\nBye\n\n[/INST]",
     "<s>[INST]Hello![/INST]",
     "<s>[INST]Hello![/INST]Hi there. How can I help?</s>"},
    {ChatTemplateKind::phi3,
     "<|system|>\nYou are a helpful assistant.<|end|>\n<|user|>\nHello!<|end|>\n<|assistant|>\nHi there. How can I help?<|end|>\n<|user|>\nWhat is 2 + 2?<|end|>\n<|assistant|>\n",
     "<|system|>\n  Be brief.\n<|end|>\n<|user|>\n Hi <|end|>\n<|assistant|>\n\tHello!  <|end|>\n<|user|>\n\nBye\n\n<|end|>\n<|assistant|>\n",
     "<|user|>\nHello!<|end|>\n<|assistant|>\n",
     "<|system|>\nYou are a helpful assistant.<|end|>\n<|user|>\nHello!<|end|>\n<|assistant|>\nHi there. How can I help?<|end|>\n<|endoftext|>"},
    {ChatTemplateKind::zephyr,
     "<|system|>\nYou are a helpful assistant.</s>\n<|user|>\nHello!</s>\n<|assistant|>\nHi there. How can I help?</s>\n<|user|>\nWhat is 2 + 2?</s>\n<|assistant|>\n",
     "<|system|>\n  Be brief.\n</s>\n<|user|>\n Hi </s>\n<|assistant|>\n\tHello!  </s>\n<|user|>\n\nBye\n\n</s>\n<|assistant|>\n",
     "<|user|>\nHello!</s>\n<|assistant|>\n",
     "<|system|>\nYou are a helpful assistant.</s>\n<|user|>\nHello!</s>\n<|assistant|>\nHi there. How can I help?</s>\n"},
    {ChatTemplateKind::gemma,
     "<bos><start_of_turn>user\nYou are a helpful assistant.\n\nHello!<end_of_turn>\n<start_of_turn>model\nHi there. How can I help?<end_of_turn>\n<start_of_turn>user\nWhat is 2 + 2?<end_of_turn>\n<start_of_turn>model\n",
     "<bos><start_of_turn>user\n  Be brief.\n\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n",
     "<bos><start_of_turn>user\nHello!<end_of_turn>\n<start_of_turn>model\n",
     "<bos><start_of_turn>user\nYou are a helpful assistant.\n\nHello!<end_of_turn>\n<start_of_turn>model\nHi there. How can I help?<end_of_turn>\n"},
    {ChatTemplateKind::deepseek,
     "<｜begin▁of▁sentence｜>You are a helpful assistant.### Instruction:\nHello!\n### Response:\nHi there. How can I help?\n<|EOT|>\n### Instruction:\nWhat is 2 + 2?\n### Response:\n",
     "<｜begin▁of▁sentence｜>  Be brief.\n### Instruction:\n Hi \n### Response:\n\tHello!  \n<|EOT|>\n### Instruction:\n\nBye\n\n\n### Response:\n",
     "<｜begin▁of▁sentence｜>You are an AI programming assistant, utilizing the Deepseek Coder model, developed by Deepseek Company, and you only answer questions related to computer science. For politically sensitive questions, security and privacy issues, and other non-computer science questions, you will refuse to answer\n### Instruction:\nHello!\n### Response:\n",
     "<｜begin▁of▁sentence｜>You are a helpful assistant.### Instruction:\nHello!\n### Response:\nHi there. How can I help?\n<|EOT|>\n"},
    {ChatTemplateKind::deepseek2,
     "<｜begin▁of▁sentence｜>You are a helpful assistant.\n\nUser: Hello!\n\nAssistant: Hi there. How can I help?<｜end▁of▁sentence｜>User: What is 2 + 2?\n\nAssistant:",
     "<｜begin▁of▁sentence｜>  Be brief.\n\n\nUser:  Hi \n\nAssistant: \tHello!  <｜end▁of▁sentence｜>User: \nBye\n\n\n\nAssistant:",
     "<｜begin▁of▁sentence｜>User: Hello!\n\nAssistant:",
     "<｜begin▁of▁sentence｜>You are a helpful assistant.\n\nUser: Hello!\n\nAssistant: Hi there. How can I help?<｜end▁of▁sentence｜>"},
    {ChatTemplateKind::deepseek3,
     "<｜begin▁of▁sentence｜>You are a helpful assistant.<｜User｜>Hello!<｜Assistant｜>Hi there. How can I help?<｜end▁of▁sentence｜><｜User｜>What is 2 + 2?<｜Assistant｜>",
     "<｜begin▁of▁sentence｜>  Be brief.\n<｜User｜> Hi <｜Assistant｜>\tHello!  <｜end▁of▁sentence｜><｜User｜>\nBye\n\n<｜Assistant｜>",
     "<｜begin▁of▁sentence｜><｜User｜>Hello!<｜Assistant｜>",
     "<｜begin▁of▁sentence｜>You are a helpful assistant.<｜User｜>Hello!<｜Assistant｜>Hi there. How can I help?<｜end▁of▁sentence｜>"},
    // The rest rendered from ../shared/templates by the jinja2 reference (tests/tools/render_chat_reference.py).
    {ChatTemplateKind::llama31,
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nYou are a helpful assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there. How can I help?<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2 + 2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
     "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nYou are a helpful assistant.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there. How can I help?<|eot_id|>"},
    {ChatTemplateKind::qwen3,
     "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\nHi there. How can I help?<|im_end|>\n<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n",
     "<|im_start|>system\n  Be brief.\n<|im_end|>\n<|im_start|>user\n Hi <|im_end|>\n<|im_start|>assistant\n\tHello!  <|im_end|>\n<|im_start|>user\n\nBye\n\n<|im_end|>\n<|im_start|>assistant\n",
     "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
     "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHi there. How can I help?<|im_end|>\n"},
    {ChatTemplateKind::qwen35,
     "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\nHi there. How can I help?<|im_end|>\n<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n<think>\n",
     "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n<think>\n",
     "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n<think>\n",
     "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHi there. How can I help?<|im_end|>\n"},
    {ChatTemplateKind::gemma4,
     "<bos><|turn>system\nYou are a helpful assistant.<turn|>\n<|turn>user\nHello!<turn|>\n<|turn>model\nHi there. How can I help?<turn|>\n<|turn>user\nWhat is 2 + 2?<turn|>\n<|turn>model\n<|channel>thought\n<channel|>",
     "<bos><|turn>system\nBe brief.<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\nHello!<turn|>\n<|turn>user\nBye<turn|>\n<|turn>model\n<|channel>thought\n<channel|>",
     "<bos><|turn>user\nHello!<turn|>\n<|turn>model\n<|channel>thought\n<channel|>",
     "<bos><|turn>system\nYou are a helpful assistant.<turn|>\n<|turn>user\nHello!<turn|>\n<|turn>model\nHi there. How can I help?<turn|>\n"},
    {ChatTemplateKind::deepseek_r1,
     "<｜begin▁of▁sentence｜>You are a helpful assistant.<｜User｜>Hello!<｜Assistant｜>Hi there. How can I help?<｜end▁of▁sentence｜><｜User｜>What is 2 + 2?<｜Assistant｜><think>\n",
     "<｜begin▁of▁sentence｜>  Be brief.\n<｜User｜> Hi <｜Assistant｜>\tHello!  <｜end▁of▁sentence｜><｜User｜>\nBye\n\n<｜Assistant｜><think>\n",
     "<｜begin▁of▁sentence｜><｜User｜>Hello!<｜Assistant｜><think>\n",
     "<｜begin▁of▁sentence｜>You are a helpful assistant.<｜User｜>Hello!<｜Assistant｜>Hi there. How can I help?<｜end▁of▁sentence｜>"},
};

class ChatTemplateGolden : public testing::TestWithParam<GoldenCase> {
 protected:
  ChatTemplate chat_template() const {
    ChatTemplate t = make_chat_template(GetParam().kind);
    // The ChatML golden comes from Qwen2's template, which writes this when there is no system message.
    if (GetParam().kind == ChatTemplateKind::chatml) t.default_system_message = "You are a helpful assistant";
    return t;
  }
};

TEST_P(ChatTemplateGolden, SystemAndTwoTurnsWithGenerationPrompt) {
  EXPECT_EQ(render_chat(chat_template(), kConversation, true), GetParam().conversation);
}

TEST_P(ChatTemplateGolden, TrimsExactlyWhereTheOfficialTemplateDoes) {
  EXPECT_EQ(render_chat(chat_template(), kPaddedConversation, true), GetParam().padded);
}

TEST_P(ChatTemplateGolden, WithoutSystemMessage) {
  EXPECT_EQ(render_chat(chat_template(), kNoSystem, true), GetParam().no_system);
}

TEST_P(ChatTemplateGolden, EndingWithAnAnswerWithoutGenerationPrompt) {
  EXPECT_EQ(render_chat(chat_template(), kEndsWithAnswer, false), GetParam().ends_with_answer);
}

// What a chat session relies on to reuse its KV cache: the text the model saw in one turn — the prompt,
// then its answer — starts the next turn's rendering. Every family keeps that except Mistral v3, whose
// template moves the system message in front of the last user message, and the reasoning
// templates (Qwen3.5, Gemma 4, DeepSeek R1) whose generation prompt opens a block the history drops.
TEST_P(ChatTemplateGolden, NextTurnExtendsWhatTheModelSaw) {
  const ChatTemplateKind kind = GetParam().kind;
  const ChatTemplate t = chat_template();
  const std::vector<ChatMessage> first_turn(kConversation.begin(), kConversation.begin() + 2);
  // Where the history puts a space between the generation prompt's end and the answer ("[/INST] Hi",
  // "Assistant: Hi"), the model writes that space as part of its first token.
  const bool answer_brings_space =
      kind == ChatTemplateKind::llama2 || kind == ChatTemplateKind::mistral_v1 || kind == ChatTemplateKind::deepseek2;
  const std::string seen = render_chat(t, first_turn, true) + (answer_brings_space ? " " : "") + kConversation[2].content;
  const std::string next = render_chat(t, kConversation, true);
  // Mistral v3 moves the system message; the reasoning templates open the answer with a think block
  // or thought channel that the history leaves out.
  const bool rewrites_history = kind == ChatTemplateKind::mistral_v3 || kind == ChatTemplateKind::mistral_v3_tekken ||
                                kind == ChatTemplateKind::qwen35 || kind == ChatTemplateKind::gemma4 ||
                                kind == ChatTemplateKind::deepseek_r1;
  EXPECT_EQ(next.compare(0, seen.size(), seen) == 0, !rewrites_history) << next;
}

std::string family_name(const testing::TestParamInfo<GoldenCase>& info) {
  std::string name = chat_template_name(info.param.kind);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Families, ChatTemplateGolden, testing::ValuesIn(kGoldenCases), family_name);

TEST(ChatTemplateGoldenCoverage, EveryFamilyHasGoldens) {
  std::vector<std::string> covered;
  for (const GoldenCase& c : kGoldenCases) covered.push_back(chat_template_name(c.kind));
  std::string joined;
  for (const std::string& name : covered) joined += (joined.empty() ? "" : ", ") + name;
  EXPECT_EQ(joined, chat_template_names());
}

// ---- Detection ----

TEST(ChatTemplateDetect, OfficialTemplatesOfEveryFamily) {
  const std::pair<const char*, ChatTemplateKind> cases[] = {
      {kLlama2Chat, ChatTemplateKind::llama2},
      {kLlama3Instruct, ChatTemplateKind::llama3},
      {kMistralV1, ChatTemplateKind::mistral_v1},
      {kMistral7bV01, ChatTemplateKind::mistral_v1},
      {kMistralV3, ChatTemplateKind::mistral_v3},
      {kMistralNemo, ChatTemplateKind::mistral_v3_tekken},
      {kPhi35Mini, ChatTemplateKind::phi3},
      {kPhi3Small, ChatTemplateKind::phi3},
      {kZephyrBeta, ChatTemplateKind::zephyr},
      {kGemma3, ChatTemplateKind::gemma},
      {kGemma7b, ChatTemplateKind::gemma},
      {kDeepSeekCoder, ChatTemplateKind::deepseek},
      {kDeepSeekV2, ChatTemplateKind::deepseek2},
      {kDeepSeekV3, ChatTemplateKind::deepseek3},
      {kSmolLM2, ChatTemplateKind::chatml},
      {kQwen25, ChatTemplateKind::chatml},
      {kOpenHermes, ChatTemplateKind::chatml},
  };
  for (const auto& [jinja, kind] : cases) {
    const std::optional<ChatTemplateKind> detected = detect_chat_template(jinja);
    ASSERT_TRUE(detected.has_value()) << jinja;
    EXPECT_EQ(chat_template_name(*detected), std::string(chat_template_name(kind))) << jinja;
  }
}

TEST(ChatTemplateDetect, TemplatesInTheSharedGgufFiles) {
  NUCLEUS_REQUIRE_SHARED();
  EXPECT_EQ(detect_chat_template(template_of("models/test/qwen2-f16.gguf")), ChatTemplateKind::chatml);
  EXPECT_EQ(detect_chat_template(template_of("vocab/ggml-vocab-qwen2.gguf")), ChatTemplateKind::chatml);
  // Phi-3-mini's first template: BOS text, no system role, the assistant cue after every user turn.
  EXPECT_EQ(detect_chat_template(template_of("vocab/ggml-vocab-phi-3.gguf")), ChatTemplateKind::phi3);
}

TEST(ChatTemplateDetect, LookAlikesAndUnknownTemplatesAreRefused) {
  EXPECT_EQ(detect_chat_template(kPhi4), std::nullopt);       // ChatML tokens, another layout
  EXPECT_EQ(detect_chat_template(kMistralV7), std::nullopt);  // [INST] with a system turn of its own
  EXPECT_EQ(detect_chat_template(kCommandR), std::nullopt);
  EXPECT_EQ(detect_chat_template(kGlmEdge), std::nullopt);    // <|user|>/<|assistant|> without EOS
  EXPECT_EQ(detect_chat_template(""), std::nullopt);
  EXPECT_EQ(detect_chat_template("{% for message in messages %}{{ message['content'] }}{% endfor %}"), std::nullopt);
}

TEST(ChatTemplateDetect, AFamilyNameStandsForItself) {
  EXPECT_EQ(detect_chat_template("chatml"), ChatTemplateKind::chatml);
  EXPECT_EQ(detect_chat_template(" mistral-v3-tekken\n"), ChatTemplateKind::mistral_v3_tekken);
  EXPECT_EQ(detect_chat_template("chatml2"), std::nullopt);
}

TEST(ChatTemplateNames, RoundTripAndUnknown) {
  for (const GoldenCase& c : kGoldenCases) EXPECT_EQ(chat_template_from_name(chat_template_name(c.kind)), c.kind);
  EXPECT_EQ(chat_template_from_name("llama-3"), std::nullopt);
  EXPECT_EQ(chat_template_from_name(""), std::nullopt);
}

TEST(ChatTemplateDefaultSystem, ReadFromChatmlTemplates) {
  EXPECT_EQ(chatml_default_system_message(kSmolLM2), "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  EXPECT_EQ(chatml_default_system_message(kQwen25), "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
  EXPECT_EQ(chatml_default_system_message(kOpenHermes), "");
  EXPECT_EQ(chatml_default_system_message(kPhi4), "");
}

// ---- Rendering rules and errors ----

TEST(ChatTemplateRender, UnsupportedRoleIsAnError) {
  try {
    render_chat(ChatTemplateKind::chatml, {{"user", "hi"}, {"tool", "42"}}, true);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'tool'"), std::string::npos) << e.what();
  }
}

TEST(ChatTemplateRender, LateSystemMessageOnlyWhereTheTemplateCanPlaceIt) {
  const std::vector<ChatMessage> late_system = {{"user", "a"}, {"system", "s"}, {"user", "b"}};
  EXPECT_THROW(render_chat(ChatTemplateKind::llama2, late_system, true), Error);
  EXPECT_THROW(render_chat(ChatTemplateKind::mistral_v3, late_system, true), Error);
  EXPECT_THROW(render_chat(ChatTemplateKind::gemma, late_system, true), Error);
  EXPECT_EQ(render_chat(ChatTemplateKind::chatml, late_system, false),
            "<|im_start|>user\na<|im_end|>\n<|im_start|>system\ns<|im_end|>\n<|im_start|>user\nb<|im_end|>\n");
  // DeepSeek V3 gathers every system message at the start, joined by blank lines.
  EXPECT_EQ(render_chat(ChatTemplateKind::deepseek3, {{"system", "s1"}, {"user", "a"}, {"system", "s2"}}, true),
            "<｜begin▁of▁sentence｜>s1\n\ns2<｜User｜>a<｜Assistant｜>");
}

TEST(ChatTemplateRender, TrimFollowsPythonWhitespace) {
  // Jinja's trim is Python's str.strip(): Unicode spaces go too (U+3000, U+00A0), other characters stay.
  EXPECT_EQ(render_chat(ChatTemplateKind::llama3, {{"user", "\xE3\x80\x80 x\xC2\xA0"}}, false),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>");
  EXPECT_EQ(render_chat(ChatTemplateKind::llama3, {{"user", "\xE2\x80\x8Bx"}}, false),  // U+200B is not whitespace
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n\xE2\x80\x8Bx<|eot_id|>");
}

TEST(ChatTemplateRender, FamilyTokensComeFromTheTemplate) {
  ChatTemplate zephyr = make_chat_template(ChatTemplateKind::zephyr);
  zephyr.eos_token = "<|endoftext|>";  // StableLM 2 Zephyr's EOS
  EXPECT_EQ(render_chat(zephyr, kNoSystem, true), "<|user|>\nHello!<|endoftext|>\n<|assistant|>\n");
}

// ---- The template of a model ----

TEST(ChatTemplateForModel, Qwen2RendersItsOwnTemplateWithItsDefaultSystem) {
  NUCLEUS_REQUIRE_SHARED();
  const auto file = GgufFile::open(shared_path("models/test/qwen2-f16.gguf"));
  const Tokenizer& tokenizer = tokenizer_of("models/test/qwen2-f16.gguf");
  const ChatTemplate t = chat_template_for_model(*file, tokenizer, "");
  EXPECT_TRUE(t.jinja);                        // the model's own template runs
  EXPECT_EQ(t.kind, ChatTemplateKind::chatml);  // the family it resembles
  EXPECT_EQ(t.bos_token, "<|endoftext|>");
  // Its default system message comes from running the template itself.
  EXPECT_EQ(render_chat(t, kNoSystem, true),
            "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplateForModel, OverrideByName) {
  NUCLEUS_REQUIRE_SHARED();
  const auto file = GgufFile::open(shared_path("models/test/qwen2-f16.gguf"));
  const ChatTemplate t = chat_template_for_model(*file, tokenizer_of("models/test/qwen2-f16.gguf"), "zephyr");
  EXPECT_EQ(t.kind, ChatTemplateKind::zephyr);
  EXPECT_EQ(t.default_system_message, "");  // Qwen2's default belongs to its own template
  EXPECT_EQ(t.eos_token, "<|endoftext|>");  // the vocabulary's EOS
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ChatTemplateForModel, UnknownOverrideNameListsTheKnownOnes) {
  NUCLEUS_REQUIRE_SHARED();
  const auto file = GgufFile::open(shared_path("models/test/qwen2-f16.gguf"));
  const std::string message =
      error_of([&] { chat_template_for_model(*file, tokenizer_of("models/test/qwen2-f16.gguf"), "llama-9"); });
  EXPECT_NE(message.find("'llama-9'"), std::string::npos) << message;
  EXPECT_NE(message.find(chat_template_names()), std::string::npos) << message;
}

TEST(ChatTemplateForModel, MissingTemplateSuggestsTheFlag) {
  NUCLEUS_REQUIRE_SHARED();
  const auto file = GgufFile::open(shared_path("models/stories260K.gguf"));
  const std::string message =
      error_of([&] { chat_template_for_model(*file, tokenizer_of("models/stories260K.gguf"), ""); });
  EXPECT_NE(message.find("stories260K.gguf has no tokenizer.chat_template"), std::string::npos) << message;
  EXPECT_NE(message.find("--chat-template"), std::string::npos) << message;
}

// A template no family renderer reproduces (Phi-4's <|im_sep|> ChatML, once refused) renders through the
// Jinja interpreter, as jinja2 renders it (expected text from python3-jinja2 with transformers' settings).
TEST(ChatTemplateForModel, TemplateOfNoFamilyRendersThroughTheInterpreter) {
  NUCLEUS_REQUIRE_SHARED();
  GgufWriter writer;
  writer.set("tokenizer.chat_template", MetaValue::string(kPhi4));
  const auto file = GgufFile::from_bytes(writer.to_bytes(), "phi-4.gguf");
  const ChatTemplate t = chat_template_for_model(*file, tokenizer_of("models/test/qwen2-f16.gguf"), "");
  ASSERT_TRUE(t.jinja);
  EXPECT_EQ(render_chat(t, {{"system", "You are terse."}, {"user", "Hello!"}, {"assistant", "Hi."}, {"user", "Bye"}}, true),
            "<|im_start|>system<|im_sep|>You are terse.<|im_end|><|im_start|>user<|im_sep|>Hello!<|im_end|>"
            "<|im_start|>assistant<|im_sep|>Hi.<|im_end|><|im_start|>user<|im_sep|>Bye<|im_end|>"
            "<|im_start|>assistant<|im_sep|>");
}

// A template the interpreter cannot run is refused when the model loads, naming the file, the construct
// and its line, never rendered approximately.
TEST(ChatTemplateForModel, UnsupportedTemplateConstructIsNamed) {
  NUCLEUS_REQUIRE_SHARED();
  GgufWriter writer;
  writer.set("tokenizer.chat_template", MetaValue::string("{% for message in messages %}\n{% include 'turn.jinja' %}{% endfor %}"));
  const auto file = GgufFile::from_bytes(writer.to_bytes(), "custom.gguf");
  const std::string message =
      error_of([&] { chat_template_for_model(*file, tokenizer_of("models/test/qwen2-f16.gguf"), ""); });
  EXPECT_NE(message.find("custom.gguf: tokenizer.chat_template (it begins '{% for message in messages %}"), std::string::npos)
      << message;
  EXPECT_NE(message.find("line 2: the statement 'include' is not supported"), std::string::npos) << message;
  EXPECT_NE(message.find("--chat-template"), std::string::npos) << message;
}

// ---- Encoding a rendered prompt ----

size_t count_of(const std::vector<int32_t>& tokens, int32_t id) {
  return static_cast<size_t>(std::count(tokens.begin(), tokens.end(), id));
}

TEST(ChatPromptEncoding, Llama3WritesItsOwnBosSoNoSecondOne) {
  NUCLEUS_REQUIRE_SHARED();
  const Tokenizer& tokenizer = tokenizer_of("vocab/ggml-vocab-llama-bpe.gguf");
  ASSERT_TRUE(tokenizer.add_bos());
  const std::string rendered = render_chat(ChatTemplateKind::llama3, kConversation, true);
  const std::vector<int32_t> tokens = encode_chat_prompt(tokenizer, rendered);
  ASSERT_GE(tokens.size(), 2u);
  EXPECT_EQ(tokens[0], tokenizer.bos_id());
  EXPECT_EQ(tokens[1], tokenizer.find_token("<|start_header_id|>"));
  EXPECT_EQ(count_of(tokens, tokenizer.bos_id()), 1u);
  EXPECT_EQ(count_of(tokens, tokenizer.find_token("<|eot_id|>")), 4u);  // special text parsed, not spelled out
  // Encoding with add_special as for plain text would have doubled it.
  EXPECT_EQ(count_of(tokenizer.encode(rendered, true, true), tokenizer.bos_id()), 2u);
}

TEST(ChatPromptEncoding, BosIsAddedWhenTheTemplateDoesNotWriteIt) {
  NUCLEUS_REQUIRE_SHARED();
  const Tokenizer& tokenizer = tokenizer_of("vocab/ggml-vocab-phi-3.gguf");  // SentencePiece, add_bos
  ASSERT_TRUE(tokenizer.add_bos());
  const std::vector<int32_t> tokens = encode_chat_prompt(tokenizer, render_chat(ChatTemplateKind::phi3, kNoSystem, true));
  ASSERT_GE(tokens.size(), 2u);
  EXPECT_EQ(tokens[0], tokenizer.bos_id());
  EXPECT_EQ(tokens[1], tokenizer.find_token("<|user|>"));
  EXPECT_EQ(count_of(tokens, tokenizer.bos_id()), 1u);
  EXPECT_NE(tokens.back(), tokenizer.eos_id());  // never an EOS: the model is to continue
}

TEST(ChatPromptEncoding, SentencePieceTemplateWithBosText) {
  NUCLEUS_REQUIRE_SHARED();
  const Tokenizer& tokenizer = tokenizer_of("vocab/ggml-vocab-llama-spm.gguf");
  const std::vector<int32_t> tokens = encode_chat_prompt(tokenizer, render_chat(ChatTemplateKind::llama2, kConversation, true));
  ASSERT_GE(tokens.size(), 2u);
  EXPECT_EQ(tokens[0], tokenizer.bos_id());
  EXPECT_NE(tokens[1], tokenizer.bos_id());
  EXPECT_EQ(count_of(tokens, tokenizer.bos_id()), 2u);  // one per user turn, as the template writes
  EXPECT_EQ(count_of(tokens, tokenizer.eos_id()), 1u);  // after the answer
}

TEST(ChatPromptEncoding, ChatmlWithoutBos) {
  NUCLEUS_REQUIRE_SHARED();
  const Tokenizer& tokenizer = tokenizer_of("models/test/qwen2-f16.gguf");
  ASSERT_FALSE(tokenizer.add_bos());
  const std::vector<int32_t> tokens = encode_chat_prompt(tokenizer, render_chat(ChatTemplateKind::chatml, kNoSystem, true));
  const int32_t im_start = tokenizer.find_token("<|im_start|>");
  ASSERT_GE(im_start, 0);
  EXPECT_EQ(tokens.front(), im_start);
  EXPECT_EQ(count_of(tokens, im_start), 2u);
  EXPECT_EQ(count_of(tokens, tokenizer.find_token("<|im_end|>")), 1u);
}

}  // namespace
}  // namespace nucleus
