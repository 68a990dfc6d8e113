# tests/cli/mrope_cli.cmake — `ropecheck audit` on the M-RoPE dumps of tests/data/dumps/mrope (made by
# make_mrope_dumps.py there), included inside tests/CMakeLists.txt's ropecheck_cli_test block. The claim
# is given by flags (--mrope, --mrope-section): config.json reading of mrope_section comes with the
# per-architecture config work; the config.json beside the dumps is HF's Qwen2.5-VL spelling of the same.
set(mdumps ${CMAKE_CURRENT_SOURCE_DIR}/data/dumps/mrope)
set(mclaim --base 1000000 --head-dim 32 --mrope contiguous --mrope-section 4,6,6 --max-position-embeddings 128000)
ropecheck_cli_test(audit_mrope_correct_passes_and_says_its_rows 0
                   "M-RoPE contiguous \\[4, 6, 6\\], 3 position rows, 42 text tokens, 15 multimodal tokens.*PASS against the exact"
                   audit ${mdumps}/mrope_good.safetensors ${mclaim} --quiet)
ropecheck_cli_test(audit_mrope_hf_batch_layout_passes 0 "positions are \\[3, 1, 57\\]: M-RoPE position rows.*PASS against the exact"
                   audit ${mdumps}/mrope_hf_batch.safetensors ${mclaim} --quiet)
ropecheck_cli_test(audit_mrope_rows_swapped_fails_and_names_it 1 "\\[mrope_rows_swapped\\] the position rows are permuted"
                   audit ${mdumps}/mrope_rows_swapped.safetensors ${mclaim} --quiet)
ropecheck_cli_test(audit_mrope_text_only_positions_pass_with_a_note 0 "read as text-only tokens.*PASS"
                   audit ${mdumps}/mrope_text_only.safetensors ${mclaim} --quiet)
ropecheck_cli_test(audit_mrope_json_states_rows_and_tokens 0 "\"multimodal_tokens\": 15"
                   audit ${mdumps}/mrope_good.safetensors ${mclaim} --quiet --json -)
ropecheck_cli_test(audit_mrope_dump_under_a_1d_claim_exits_2 2 "looks multimodal \\(M-RoPE\\) but the claim is 1-D RoPE.*mrope_section"
                   audit ${mdumps}/mrope_good.safetensors --base 1000000 --head-dim 32 --mrope none --quiet)
ropecheck_cli_test(audit_mrope_more_rows_than_sections_exits_2 2 "positions hold 4 rows but the M-RoPE claim"
                   audit ${mdumps}/mrope_four_rows.safetensors ${mclaim} --quiet)
ropecheck_cli_test(audit_mrope_bad_section_exits_2 2 "mrope_section"
                   audit ${mdumps}/mrope_good.safetensors --base 1000000 --head-dim 32 --mrope contiguous --mrope-section 4,6,7 --quiet)
