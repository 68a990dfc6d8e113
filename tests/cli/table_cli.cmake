# tests/cli/table_cli.cmake — the table door on the command line (tools/ropecheck.cpp run_table_audit, tools/audit/
# table_dump.cpp, tools/probe/probe_cli.cpp run_table, tools/explain/explain_cli.cpp explain_table; docs/tables.md),
# included inside tests/cli/cli.cmake's block (label cli). The dumps are tests/data/table_dumps/ (make_dumps.py).
# Each refusal exits 2 naming the field or flag; a correct table exits 0, a wrong one 1 naming its class.
set(tout ${CMAKE_CURRENT_BINARY_DIR}/cli-table)
file(MAKE_DIRECTORY ${tout})
set(tdumps ${CMAKE_CURRENT_SOURCE_DIR}/data/table_dumps)
set(tfam ${CMAKE_CURRENT_SOURCE_DIR}/data/table_families)
set(tllama ${CMAKE_CURRENT_SOURCE_DIR}/data/configs/llama3_1_8b.json)

ropecheck_cli_test(table_explain_m2m100 0
                   "an absolute position vector added at the input[^\n]*\nstack: encoder[^\n]*\nscheme: sinusoidal concatenated \\[sin \\| cos\\], frequencies 10000\\^\\(-i/511\\), offset 2 \\(padding skipped"
                   explain --config ${tfam}/m2m_100.json)
ropecheck_cli_test(table_explain_whisper_decoder 0 "stack: decoder[^\n]*\nscheme: learned table of 448 rows, offset 0"
                   explain --config ${tfam}/whisper.json --stack decoder)
ropecheck_cli_test(table_families_listed 0 "roberta +table +RoBERTa.*absolute position table families"
                   explain --families)
ropecheck_cli_test(table_config_on_the_rope_door_exits_2 2 "claims an absolute position table \\(GPT-2[^\n]*the table door"
                   certify --config ${tfam}/gpt2.json --out ${tout}/none)
ropecheck_cli_test(table_flag_on_the_rope_door_exits_2 2 "--table-scheme declares an absolute position table"
                   audit ${tdumps}/paper_d8.safetensors --config ${tllama} --table-scheme sinusoidal)

ropecheck_cli_test(table_audit_paper_passes 0 "PASS: the table passes"
                   audit ${tdumps}/paper_d8.safetensors --table --table-scheme sinusoidal --table-layout interleaved)
ropecheck_cli_test(table_audit_layout_wrong_exits_1 1 "first finding: \\[sinusoid_layout_wrong\\] the rows are interleaved"
                   audit ${tdumps}/paper_d8.safetensors --table --table-scheme sinusoidal --table-layout concatenated)
ropecheck_cli_test(table_audit_learned_passes 0 "1 positions refused.*PASS: the table passes"
                   audit ${tdumps}/learned_rows.safetensors --table --table-scheme learned --table-rows 10
                   --table-weights ${tdumps}/learned_weights.npy)
ropecheck_cli_test(table_audit_learned_past_a_shorter_claim_exits_1 1 "positions_past_table"
                   audit ${tdumps}/learned_rows.safetensors --table --table-scheme learned --table-rows 10 --table-offset 1
                   --table-weights ${tdumps}/learned_weights.npy)

# Bad input (issue 32): rows that do not match their positions, a learned claim without its length or weights, an
# offset past the table, a transposed table, a tensor the door does not read, no claim at all.
ropecheck_cli_test(table_rows_not_matching_positions_exits_2 2 "positions: 2 entries for 3 rows"
                   audit ${tdumps}/mismatch.safetensors --table --table-scheme learned --table-rows 10
                   --table-weights ${tdumps}/learned_weights.npy)
ropecheck_cli_test(table_learned_without_length_exits_2 2 "--table-scheme learned needs --table-rows"
                   audit ${tdumps}/learned_rows.safetensors --table --table-scheme learned)
ropecheck_cli_test(table_learned_without_weights_exits_2 2 "--table-weights: a learned table is judged against its weights"
                   audit ${tdumps}/learned_rows.safetensors --table --table-scheme learned --table-rows 10)
ropecheck_cli_test(table_offset_past_the_table_exits_2 2 "offset: 10 is not below the table's 10 rows"
                   audit ${tdumps}/learned_rows.safetensors --table --table-scheme learned --table-rows 10 --table-offset 10
                   --table-weights ${tdumps}/learned_weights.npy)
ropecheck_cli_test(table_weights_transposed_exits_2 2 "--table-weights: [^\n]*shape \\[4, 10\\][^\n]*transposed"
                   audit ${tdumps}/learned_rows.safetensors --table --table-scheme learned --table-rows 10
                   --table-weights ${tdumps}/learned_weights_transposed.npy)
ropecheck_cli_test(table_unread_tensor_exits_2 2 "tensor \"x\" is not read by the table door"
                   audit ${tdumps}/extra.safetensors --table --table-scheme sinusoidal --table-layout interleaved)
ropecheck_cli_test(table_without_claim_exits_2 2 "no table claimed"
                   audit ${tdumps}/paper_d8.safetensors --table)
ropecheck_cli_test(table_sinusoid_without_layout_exits_2 2 "--table-scheme sinusoidal needs --table-layout"
                   audit ${tdumps}/paper_d8.safetensors --table --table-scheme sinusoidal)
ropecheck_cli_test(table_config_width_mismatch_exits_2 2 "the rows are 8 wide; [^\n]*claims a table of width 768"
                   audit ${tdumps}/paper_d8.safetensors --table --config ${tfam}/bert.json --table-weights ${tdumps}/learned_weights.npy)

# The probe for the Python door: the positions inside the table and past its end.
ropecheck_cli_test(table_probe_writes_the_positions 0 "76 positions inside the table, 3 past its end[^\n]*learned table of 2050 rows, offset 2"
                   probe --config ${tfam}/opt.json --form table --dtype float16 --out ${tout}/opt_probe.safetensors)
ropecheck_cli_test(table_probe_form_x_exits_2 2 "--form x: [^\n]*claim an absolute position table[^\n]*--form table"
                   probe --config ${tfam}/opt.json --dtype float16 --out ${tout}/none.safetensors)

# The report of an absolute sinusoid (tools/report/table_figure.cpp): the strategies engines use against the MPFR
# sinusoid; a learned table has no such figure.
ropecheck_cli_test(table_report_sinusoid 0
                   "ropecheck report: sinusoidal concatenated[^\n]*\\(Whisper\\), positions 0..1499\n  float64_fp32  max error[^\n]*\n  fp32 [^\n]*\n  fp32_bf16 [^\n]*\n  fp32_fp16 "
                   report --config ${tfam}/whisper.json --no-plots --out ${tout}/report_whisper)
ropecheck_cli_test(table_report_learned_exits_2 2 "a learned table's values are its weights"
                   report --config ${tfam}/gpt2.json --no-plots --out ${tout}/report_gpt2)
