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

# `ropecheck report` on a bias family's config (tools/ropecheck.cpp, tools/report/alibi_bias.hpp run_alibi_report):
# ALiBi's figure with the claim read from the config and a rank's heads declared; T5 and RoPE's --impl refused.
set(bfalcon ${CMAKE_CURRENT_SOURCE_DIR}/data/bias_families/falcon.json)
set(bt5 ${CMAKE_CURRENT_SOURCE_DIR}/data/bias_families/t5.json)
ropecheck_cli_test(bias_report_config_writes_the_alibi_figure 0
                   "slopes press[^\n]*build_alibi_tensor.*ropecheck report: ALiBi press slopes of 16 heads, distance key_position\n  tensor_fp32  max bias error"
                   report --config ${bbloom} --no-plots --out ${bout}/report_bloom)
ropecheck_cli_test(bias_report_config_with_a_ranks_heads 0
                   "ropecheck report: ALiBi press slopes of 32 heads \\(heads 16..31 held\\), distance key_position, bias x 0.125, slopes in bf16"
                   report --config ${bfalcon} --head-offset 16 --local-heads 16 --no-plots --out ${bout}/report_falcon)
ropecheck_cli_test(bias_report_t5_config_exits_2 2 "claims T5's bucketed bias \\(T5\\)[^\n]*no error against position"
                   report --config ${bt5} --no-plots --out ${bout}/report_t5)
ropecheck_cli_test(bias_report_config_with_impl_exits_2 2 "claims a score-matrix bias \\(BLOOM\\); --impl"
                   report --config ${bbloom} --impl hf --no-plots --out ${bout}/report_none)
ropecheck_cli_test(bias_report_alibi_heads_with_config_exits_2 2 "--alibi-heads: an ALiBi claim by flags takes no --config"
                   report --alibi-heads 8 --config ${bbloom} --no-plots --out ${bout}/report_none)
ropecheck_cli_test(bias_report_alibi_heads_by_flags 0 "ropecheck report: ALiBi mpt[^\n]*12 heads"
                   report --alibi-heads 12 --alibi-rule mpt --no-plots --out ${bout}/report_mpt)

# --t5-table (tools/audit/bias_table.hpp): the fact is printed with its file; an ALiBi claim and a table of another
# head count are refused naming the flag.
set(btable ${CMAKE_CURRENT_SOURCE_DIR}/data/bias_families/t5_table_32x8.npy)
ropecheck_cli_test(bias_t5_table_is_a_declared_fact 0 "t5_table 32 x 8 values +\\[declared\\] +--t5-table [^\n]*t5_table_32x8.npy"
                   explain --config ${bt5} --t5-table ${btable})
ropecheck_cli_test(bias_t5_table_on_alibi_exits_2 2 "--t5-table: [^\n]*claims ALiBi \\(BLOOM\\), whose bias is a rule"
                   probe --config ${bbloom} --form attention --t5-table ${btable} --dtype float32 --out ${bout}/none.safetensors)
ropecheck_cli_test(bias_t5_table_of_other_heads_exits_2 2 "--t5-table: [^\n]*shape \\[32, 8\\], the claim's table is \\[num_buckets 32, heads 6\\]"
                   probe --config ${CMAKE_CURRENT_SOURCE_DIR}/data/bias_families/mt5.json --form attention --t5-table ${btable}
                   --dtype float32 --out ${bout}/none.safetensors)
