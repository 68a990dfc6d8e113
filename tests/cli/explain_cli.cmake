# tests/cli/explain_cli.cmake — `ropecheck explain` end to end (label cli): the derivation layer by layer,
# refusals with how to declare, --json, --engine vllm, the family and variant tables and docs/configs.md's
# copies of them. Included from tests/CMakeLists.txt (needs ropecheck_cli_test, cfgs).
set(xout ${CMAKE_CURRENT_BINARY_DIR}/cli-explain)
file(MAKE_DIRECTORY ${xout})
ropecheck_cli_test(explain_groups_the_layers_and_names_the_primary 0
                   "primary convention \\(no --layer\\): layer 3's \\(full_attention, the first RoPE layer\\).*layers 0-2, 4-6.*linear_attention, no RoPE.*rotary_dim 64 +\\[class default\\] +partial_rotary_factor absent"
                   explain --config ${cfgs}/qwen3_next_no_partial.json)
ropecheck_cli_test(explain_layer_without_rope_exits_2 2 "layer 0 \\(linear_attention\\) has no RoPE \\(linear_attention\\)"
                   explain --config ${cfgs}/qwen3_next_no_partial.json --layer 0)
ropecheck_cli_test(explain_model_type_without_facts_exits_2 2
                   "model_type \"qwen9_next\": ropecheck has no facts for this family.*--assume-llama"
                   explain --config ${cfgs}/unknown_model_type.json)
ropecheck_cli_test(explain_assume_llama_is_recorded 0 "layout half_split +\\[declared\\] +--assume-llama.*assumption: no facts for model_type \"qwen9_next\": convention declared by --assume-llama"
                   explain --config ${cfgs}/unknown_model_type.json --assume-llama)
ropecheck_cli_test(explain_refuses_an_override_it_would_not_apply 2 "--base 500000, --preset llama3-8b: explain derives the convention from --config"
                   explain --config ${cfgs}/qwen3_next_no_partial.json --base 500000 --preset llama3-8b)
ropecheck_cli_test(explain_reads_a_declaration_flag 0 "layout interleaved +\\[declared\\]"
                   explain --config ${cfgs}/unknown_model_type.json --layout interleaved --rotary-dim 64)
ropecheck_cli_test(explain_writes_json 0 "" explain --config ${cfgs}/qwen3_next_no_partial.json --json ${xout}/qwen3_next.json)
add_test(NAME cli.explain_json_has_layers_kinds_and_facts
         COMMAND ${CMAKE_COMMAND} -DFILE=${xout}/qwen3_next.json
                 "-DMATCH=\"kind\": \"linear_attention\".*\"engine\": \"transformers\"|\"engine\": \"transformers\".*\"kind\": \"linear_attention\""
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/file_matches.cmake)
set_tests_properties(cli.explain_json_has_layers_kinds_and_facts PROPERTIES LABELS cli DEPENDS cli.explain_writes_json)
ropecheck_cli_test(explain_engine_vllm_reads_dynamic_as_static_ntk 0
                   "scaling ntk \\(vLLM dynamic: static\\).*factor 3 +\\[derived\\].*engine vllm +\\[declared\\]"
                   explain --config ${cfgs}/dynamic_ntk.json --engine vllm)
ropecheck_cli_test(explain_max_model_len_needs_engine_vllm 2 "--max-model-len needs --engine vllm"
                   explain --config ${cfgs}/phi3_mini_128k.json --max-model-len 8192)
ropecheck_cli_test(explain_engine_vllm_longrope_needs_max_model_len 2 "say which with --max-model-len N"
                   explain --config ${cfgs}/phi3_mini_128k.json --engine vllm)
ropecheck_cli_test(explain_families_lists_the_table 0 "[0-9]+ families" explain --families)
ropecheck_cli_test(explain_variants_lists_every_variant 0
                   "DualChunkRotaryEmbedding +refused.*[0-9]+ variants: [0-9]+ claimable, [0-9]+ claimable with --engine vllm, [0-9]+ refused"
                   explain --variants)
foreach(what families variants)
  add_test(NAME cli.docs_${what}_table_is_current
           COMMAND ${CMAKE_COMMAND} -DROPECHECK=$<TARGET_FILE:ropecheck> -DDOC=${PROJECT_SOURCE_DIR}/docs/configs.md -DWHAT=${what}
                   -DOUT_DIR=${xout} -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/readme_table.cmake)
  set_tests_properties(cli.docs_${what}_table_is_current PROPERTIES LABELS cli)
endforeach()
# The claim at the top of the audit and in its JSON.
ropecheck_cli_test(audit_prints_the_claim_first 1 "^ropecheck audit: [^\n]*\n  claim: [^\n]*config.json: Llama \\(model_type \"llama\"\\)"
                   audit ${dumps}/base_wrong.safetensors --config ${dumps}/config.json)
add_test(NAME cli.audit_json_has_the_claim
         COMMAND ${CMAKE_COMMAND} -DFILE=${aout}/base.json "-DMATCH=\"claim\": {[^}]*\"engine\": \"transformers\""
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/file_matches.cmake)
set_tests_properties(cli.audit_json_has_the_claim PROPERTIES LABELS cli DEPENDS cli.audit_wrong_base_fails_and_names_it)
# Score-matrix biases (bias_config.hpp): a bias family's claim with its facts' sources, the stack's layer kinds,
# its JSON, and the flags of the other kind of claim refused by name.
set(biascfgs ${PROJECT_SOURCE_DIR}/tests/data/bias_families)
ropecheck_cli_test(explain_bloom_claims_alibi 0
                   "family: BLOOM \\(model_type \"bloom\"\\): a score-matrix bias, no RoPE.*scheme: ALiBi press slopes of 16 heads, distance key_position.*heads 16 +\\[file\\] +n_head.*distance key_position \\(\\+slope x n\\) \\[family code\\] +modeling_bloom.py build_alibi_tensor.*24 layers: 0-23 \\(alibi\\)"
                   explain --config ${biascfgs}/bloom_560m.json)
ropecheck_cli_test(explain_t5_decoder_shows_the_layer_kinds 0
                   "scheme: T5 buckets 32, max_distance 128, causal, 8 heads.*layer 2 \\(t5 shared\\) of 6.*decoder stack, 6 layers: 0 \\(t5 computes\\); 1-5 \\(t5 shared\\)"
                   explain --config ${biascfgs}/t5.json --stack decoder --layer 2)
ropecheck_cli_test(explain_umt5_every_layer_computes 0 "encoder stack, 8 layers: 0-7 \\(t5 computes\\)"
                   explain --config ${biascfgs}/umt5.json)
ropecheck_cli_test(explain_falcon_alibi_vllm_fp32_slopes 0
                   "ALiBi press slopes of 32 heads \\(heads 16..31 held\\), distance key_position, bias x 0.125\n.*slopes_dtype fp32 +\\[declared\\] +--engine vllm"
                   explain --config ${biascfgs}/falcon.json --engine vllm --head-offset 16)
ropecheck_cli_test(explain_bias_head_offset_past_the_heads_exits_2 2 "--head-offset: 32 is past the global head count 32"
                   explain --config ${biascfgs}/falcon.json --head-offset 32)
ropecheck_cli_test(explain_rope_flag_on_a_bias_claim_exits_2 2 "--layout: .*claims ALiBi \\(BLOOM\\), not RoPE"
                   explain --config ${biascfgs}/bloom.json --layout interleaved)
ropecheck_cli_test(explain_bias_flag_on_a_rope_claim_exits_2 2 "--stack: .*claims no score-matrix bias"
                   explain --config ${cfgs}/qwen3_next_no_partial.json --stack decoder)
ropecheck_cli_test(explain_families_lists_the_bias_families 0 "bloom +alibi +BLOOM: .*10 score-matrix bias families" explain --families)
ropecheck_cli_test(explain_writes_bias_json 0 "" explain --config ${biascfgs}/t5.json --json ${xout}/t5.json)
add_test(NAME cli.explain_bias_json_has_the_claim_and_layers
         COMMAND ${CMAKE_COMMAND} -DFILE=${xout}/t5.json
                 "-DMATCH=\"bias_claim\": \"T5 buckets 32, max_distance 128, bidirectional, 8 heads\".*\"kind\": \"t5 shared\""
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/file_matches.cmake)
set_tests_properties(cli.explain_bias_json_has_the_claim_and_layers PROPERTIES LABELS cli DEPENDS cli.explain_writes_bias_json)
