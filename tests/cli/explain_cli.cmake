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
