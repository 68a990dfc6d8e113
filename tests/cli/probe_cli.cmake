# tests/cli/probe_cli.cmake — `ropecheck probe` (tools/probe/probe_cli.hpp) and `ropecheck audit` of the
# outputs file made from its probe (tools/ropecheck.cpp run_probe_outputs_audit), included inside
# tests/cli/cli.cmake's ropecheck_cli_test block (label cli). Every bad input is exit 2 with its message;
# a good claim writes a probe file that reads as a version-1 probe (probe_identity_outputs, tests/probe/,
# reads it as the Python door does and writes the outputs of a kernel returning its input); that outputs
# file judged under another claim than the probe's is exit 2, under the probe's own claim it is judged (and fails).
set(pout ${CMAKE_CURRENT_BINARY_DIR}/cli-probe)
file(MAKE_DIRECTORY ${pout})
set(pllama ${CMAKE_CURRENT_SOURCE_DIR}/data/configs/llama3_1_8b.json)

ropecheck_cli_test(probe_without_a_claim_exits_2 2 "no claimed convention: give --config config.json, --preset NAME"
                   probe --dtype float32 --out ${pout}/none.safetensors)
# Flags alone are the whole claim: base and layout are never assumed (each missing one named), and with both
# given the probe is written.
ropecheck_cli_test(probe_flags_alone_without_base_and_layout_exits_2 2
                   "a claim by flags alone must say --base \\(rope_theta\\) --layout"
                   probe --head-dim 128 --dtype float32 --out ${pout}/none.safetensors)
ropecheck_cli_test(probe_flags_alone_without_layout_exits_2 2 "a claim by flags alone must say --layout \\(half_split"
                   probe --head-dim 128 --base 10000 --dtype float32 --out ${pout}/none.safetensors)
ropecheck_cli_test(probe_flags_alone_with_base_and_layout_writes_the_probe 0
                   "tokens x 4 heads x 128 \\(float32\\), head_dim 128, rotary_dim 128, base 10000, [^\n]*layout interleaved"
                   probe --head-dim 128 --base 10000 --layout interleaved --dtype float32 --out ${pout}/flags.safetensors)
ropecheck_cli_test(probe_bad_dtype_exits_2 2 "--dtype must be float32, bfloat16, float16 or float64, got 'float8'"
                   probe --config ${pllama} --dtype float8 --out ${pout}/none.safetensors)
# --max-position at the probe's dense positions 0..judge::max_prefill_tokens - 1 (= 63): 63 is accepted (and the
# positions past it are named as not asked), 62 is rejected.
ropecheck_cli_test(probe_max_position_at_the_last_dense_position_is_accepted 0
                   "note: probe positions [0-9][^\n]* were not asked: past the kernel's max_position 63"
                   probe --config ${pllama} --dtype float32 --max-position 63 --out ${pout}/max63.safetensors)
ropecheck_cli_test(probe_max_position_below_the_dense_positions_exits_2 2
                   "--max-position 62 is below the probe's dense positions 0\\.\\.63"
                   probe --config ${pllama} --dtype float32 --max-position 62 --out ${pout}/none.safetensors)
ropecheck_cli_test(probe_zero_heads_exits_2 2 "--heads"
                   probe --config ${pllama} --dtype float32 --heads 0 --out ${pout}/none.safetensors)
ropecheck_cli_test(probe_unwritable_out_exits_2 2 "no_such_dir/probe.safetensors: cannot be opened for writing"
                   probe --config ${pllama} --dtype float32 --out ${pout}/no_such_dir/probe.safetensors)

# A good claim: the file written, then read as the Python door reads it (version-1 probe metadata, x).
ropecheck_cli_test(probe_writes_the_probe_of_a_config 0
                   "ropecheck probe: [^\n]*llama_probe.safetensors: [0-9]+ tokens x 4 heads x 128 \\(bfloat16\\)"
                   probe --config ${pllama} --dtype bfloat16 --out ${pout}/llama_probe.safetensors)
set_tests_properties(cli.probe_writes_the_probe_of_a_config PROPERTIES FIXTURES_SETUP cli_probe_file)
add_test(NAME cli.probe_file_reads_as_a_version_1_probe
         COMMAND $<TARGET_FILE:probe_identity_outputs> ${pout}/llama_probe.safetensors ${pout}/llama_outputs.safetensors)
set_tests_properties(cli.probe_file_reads_as_a_version_1_probe PROPERTIES LABELS cli
                     FIXTURES_REQUIRED cli_probe_file FIXTURES_SETUP cli_probe_outputs)

# The outputs judged: under another claim of the same head_dim (Llama-2's base 10000) exit 2 naming the probe's
# claim; under the probe's own claim the identity kernel is judged in both forms and fails them.
ropecheck_cli_test(audit_probe_outputs_under_another_claim_exits_2 2
                   "the probe was made for \"[^\"]+\" but the claim given is \"[^\"]+\": give the probe's claim \\(__metadata__ claim_args: \\[\"--config\""
                   audit ${pout}/llama_outputs.safetensors --preset llama2-7b --quiet)
ropecheck_cli_test(audit_probe_outputs_under_the_probes_claim_is_judged 1 "FAIL: prefill calls FAIL, decode calls FAIL"
                   audit ${pout}/llama_outputs.safetensors --config ${pllama} --quiet)
set_tests_properties(cli.audit_probe_outputs_under_another_claim_exits_2 cli.audit_probe_outputs_under_the_probes_claim_is_judged
                     PROPERTIES FIXTURES_REQUIRED cli_probe_outputs)
# The dump door too: flags alone (no config.json beside this file) must say the layout, never a default
# (tools/cli_common.hpp unsaid_by_flags_alone).
ropecheck_cli_test(audit_flags_alone_without_layout_exits_2 2 "audit: a claim by flags alone must say --layout \\(half_split"
                   audit ${pout}/llama_outputs.safetensors --base 500000 --head-dim 128 --quiet)
set_tests_properties(cli.audit_flags_alone_without_layout_exits_2 PROPERTIES FIXTURES_REQUIRED cli_probe_outputs)
