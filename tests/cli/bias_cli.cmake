# tests/cli/bias_cli.cmake — `ropecheck probe` on a config whose family adds a score-matrix bias (tools/probe/
# probe_cli.cpp run_bias; docs/bias.md), included inside tests/cli/cli.cmake's block (label cli): the bias probe is
# the attention form's only, its heads are the claim's, RoPE's flags do not apply to it, and the bias flags need a
# bias family's config. Each refusal exits 2 naming the flag; the good claim writes the probe.
set(bout ${CMAKE_CURRENT_BINARY_DIR}/cli-bias)
file(MAKE_DIRECTORY ${bout})
set(bbloom ${CMAKE_CURRENT_SOURCE_DIR}/data/bias_families/bloom_560m.json)
set(bllama ${CMAKE_CURRENT_SOURCE_DIR}/data/configs/llama3_1_8b.json)

ropecheck_cli_test(bias_probe_form_x_exits_2 2 "--form x: [^\n]*claims ALiBi \\(BLOOM[^\n]*judged at the score, --form attention"
                   probe --config ${bbloom} --dtype float32 --out ${bout}/none.safetensors)
ropecheck_cli_test(bias_probe_heads_not_the_claims_exits_2 2 "--heads 8: the claim's kernel holds 16 heads"
                   probe --config ${bbloom} --form attention --heads 8 --dtype float32 --out ${bout}/none.safetensors)
ropecheck_cli_test(bias_probe_rope_flag_on_a_bias_claim_exits_2 2 "--base: [^\n]*claims ALiBi \\(BLOOM[^\n]*not RoPE"
                   probe --config ${bbloom} --form attention --base 10000 --dtype float32 --out ${bout}/none.safetensors)
ropecheck_cli_test(bias_flag_on_a_rope_config_exits_2 2 "--head-offset: [^\n]*claims no score-matrix bias"
                   probe --config ${bllama} --form attention --head-offset 4 --dtype float32 --out ${bout}/none.safetensors)
ropecheck_cli_test(bias_flag_without_a_config_exits_2 2 "--stack needs --config"
                   probe --preset llama3-8b --form attention --stack decoder --dtype float32 --out ${bout}/none.safetensors)
ropecheck_cli_test(bias_probe_writes_the_bias_probe 0
                   "attention calls \\(a query and up to 64 keys each\\) x 16 query and 16 key heads x 64[^\n]*ALiBi press slopes of 16 heads"
                   probe --config ${bbloom} --form attention --dtype bfloat16 --out ${bout}/bloom_probe.safetensors)
