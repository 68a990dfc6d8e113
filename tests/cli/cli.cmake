# tests/cli/cli.cmake — the command line, end to end (label cli), included from tests/CMakeLists.txt,
# so paths are relative to tests/ (CMAKE_CURRENT_SOURCE_DIR). The report's engine and writers and the
# audit's readers have their own unit tests (tests/report, tests/audit); ropecheck_cli_test is also
# used by tests/audit/CMakeLists.txt and tests/torch.
if(TARGET ropecheck)
  function(ropecheck_cli_test name expect match)
    add_test(NAME cli.${name}
             COMMAND ${CMAKE_COMMAND} -DEXPECT=${expect} "-DMATCH=${match}" -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/expect_exit.cmake
                     -- $<TARGET_FILE:ropecheck> ${ARGN})
    set_tests_properties(cli.${name} PROPERTIES LABELS cli TIMEOUT 300)
  endfunction()
  ropecheck_cli_test(report_writes_csv_json_and_html 0 "report: .*report.html"
                     report --preset llama2-7b --max-position 4096 --no-plots --out ${CMAKE_CURRENT_BINARY_DIR}/cli-report)
  ropecheck_cli_test(report_reads_an_hf_config 0 "llama3"
                     report --config ${CMAKE_CURRENT_SOURCE_DIR}/data/configs/llama3_1_8b.json --max-position 2048 --no-plots
                     --out ${CMAKE_CURRENT_BINARY_DIR}/cli-report-config)
  set(cfgs ${CMAKE_CURRENT_SOURCE_DIR}/data/configs)
  ropecheck_cli_test(report_prints_the_architecture_notes 0 "claim: .*glm4_9b_0414.json: GLM-4.*layout interleaved +\\[family code\\] +model_type \"glm4\""
                     report --config ${cfgs}/glm4_9b_0414.json --max-position 2048 --no-plots
                     --out ${CMAKE_CURRENT_BINARY_DIR}/cli-report-glm)
  add_test(NAME cli.report_summary_json_has_the_config_notes
           COMMAND ${CMAKE_COMMAND} -DFILE=${CMAKE_CURRENT_BINARY_DIR}/cli-report-glm/summary.json
                   "-DMATCH=\"field\": \"layout\",[^}]*\"from\": \"family code\",[^}]*glm4"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/file_matches.cmake)
  set_tests_properties(cli.report_summary_json_has_the_config_notes PROPERTIES LABELS cli
                       DEPENDS cli.report_prints_the_architecture_notes)
  ropecheck_cli_test(report_layer_selects_a_gemma3_local_layer 0 "base 10000.*note: layer 0 \\(sliding_attention, from --layer\\)"
                     report --config ${cfgs}/gemma3_4b.json --layer 0 --max-position 2048 --no-plots
                     --out ${CMAKE_CURRENT_BINARY_DIR}/cli-report-gemma3)
  # Phi-3.5-MoE's LongRoPE with short_mscale / long_mscale: the report's unscaled reference drops the mscales with
  # the rule (with_scaling); it was refused with the reference's internal message (issue 34).
  ropecheck_cli_test(report_phimoe_mscale_config 0 "attention_factor short 1.243[^\n]*rope_scaling.short_mscale.*report: .*report.html"
                     report --config ${cfgs}/phimoe_3_5_moe.json --max-position 4096 --no-plots
                     --out ${CMAKE_CURRENT_BINARY_DIR}/cli-report-phimoe)
  ropecheck_cli_test(report_layer_without_rope_exits_2 2 "--layer: layer 3 \\(full_attention\\) has no RoPE"
                     report --config ${cfgs}/llama4_scout.json --layer 3 --out ${CMAKE_CURRENT_BINARY_DIR}/cli-x)
  ropecheck_cli_test(report_layer_out_of_range_exits_2 2 "layer 48 out of range: the config has 48 layers"
                     report --config ${cfgs}/llama4_scout.json --layer 48 --out ${CMAKE_CURRENT_BINARY_DIR}/cli-x)
  ropecheck_cli_test(report_unknown_rope_field_exits_2 2 "rope_pct: not a rope field .* reads"
                     report --config ${cfgs}/broken/unknown_rope_key.json --out ${CMAKE_CURRENT_BINARY_DIR}/cli-x)
  ropecheck_cli_test(report_outputs_flag_is_checked 2 "--outputs: 'sideways' is neither in_place nor half_split"
                     report --config ${cfgs}/deepseek_v3_yarn.json --outputs sideways --out ${CMAKE_CURRENT_BINARY_DIR}/cli-x)
  ropecheck_cli_test(report_layout_flag_interleaved_is_accepted 0 "interleaved"
                     report --preset llama2-7b --layout interleaved --max-position 2048 --no-plots
                     --out ${CMAKE_CURRENT_BINARY_DIR}/cli-report-interleaved)
  ropecheck_cli_test(version_prints_the_project_version 0 "^ropecheck ${PROJECT_VERSION}" --version)
  ropecheck_cli_test(unknown_preset_exits_2 2 "unknown preset" report --preset nope --out ${CMAKE_CURRENT_BINARY_DIR}/cli-x)
  ropecheck_cli_test(broken_config_exits_2 2 "rope_scaling.factor"
                     report --config ${CMAKE_CURRENT_SOURCE_DIR}/data/configs/broken/yarn_missing_factor.json --out ${CMAKE_CURRENT_BINARY_DIR}/cli-x)
  ropecheck_cli_test(bad_override_exits_2 2 "rope_theta must be" report --base 0.5 --out ${CMAKE_CURRENT_BINARY_DIR}/cli-x)
  ropecheck_cli_test(unknown_implementation_exits_2 2 "unknown implementation" report --impl nonsense --out ${CMAKE_CURRENT_BINARY_DIR}/cli-x)

  # `ropecheck audit` on the small dumps of tests/data/dumps (made by make_dumps.py there).
  set(dumps ${CMAKE_CURRENT_SOURCE_DIR}/data/dumps)
  set(aout ${CMAKE_CURRENT_BINARY_DIR}/cli-audit)
  file(MAKE_DIRECTORY ${aout})
  ropecheck_cli_test(audit_correct_fp32_passes 0 "PASS against the exact reference"
                     audit ${dumps}/good_f32.safetensors --quiet --json ${aout}/good.json --junit ${aout}/good.xml)
  ropecheck_cli_test(audit_wrong_base_fails_and_names_it 1 "\\[base_wrong\\] base is 10000 not 500000"
                     audit ${dumps}/base_wrong.safetensors --config ${dumps}/config.json --quiet
                     --json ${aout}/base.json --junit ${aout}/base.xml)
  foreach(case good base)
    if(case STREQUAL "good")
      set(p true)
      set(c "")
    else()
      set(p false)
      set(c base_wrong)
    endif()
    add_test(NAME cli.audit_${case}_json_and_junit
             COMMAND ${CMAKE_COMMAND} -DJSON=${aout}/${case}.json -DJUNIT=${aout}/${case}.xml -DPASS=${p} -DCLASS=${c}
                     -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/check_audit_files.cmake)
    set_tests_properties(cli.audit_${case}_json_and_junit PROPERTIES LABELS cli)
  endforeach()
  set_tests_properties(cli.audit_good_json_and_junit PROPERTIES DEPENDS cli.audit_correct_fp32_passes)
  set_tests_properties(cli.audit_base_json_and_junit PROPERTIES DEPENDS cli.audit_wrong_base_fails_and_names_it)
  ropecheck_cli_test(audit_reads_hf_batch_heads_tokens_layout 0 "read as \\[batch, tokens, heads, head_dim\\].*PASS.*max error 0.4273 ulps"
                     audit ${dumps}/hf_layout.safetensors --quiet)
  ropecheck_cli_test(audit_npy_bf16_with_sidecar_passes 0 "bfloat16" audit ${dumps}/npy_bf16 --config ${dumps}/config.json --quiet)
  ropecheck_cli_test(audit_npy_bf16_declared_wrongly_exits_2 2 "y is stored as bfloat16"
                     audit ${dumps}/npy_bf16 --config ${dumps}/config.json --dtype float16 --quiet)
  ropecheck_cli_test(audit_hf_reference_fails_exact_angles 1 "not_hf_convention"
                     audit ${dumps}/good_f32.safetensors --reference hf --quiet)
  ropecheck_cli_test(audit_truncated_exits_2 2 "truncated.safetensors: .*out of the data buffer" audit ${dumps}/truncated.safetensors --quiet)
  ropecheck_cli_test(audit_lying_shape_exits_2 2 "lying_shape.safetensors: tensor 'y': shape" audit ${dumps}/lying_shape.safetensors --quiet)
  ropecheck_cli_test(audit_nan_input_exits_2 2 "nan_x.safetensors: x .* NaN" audit ${dumps}/nan_x.safetensors --quiet)
  ropecheck_cli_test(audit_unknown_dtype_exits_2 2 "unknown_dtype.safetensors: tensor 'y': unknown dtype .F8_E4M3."
                     audit ${dumps}/unknown_dtype.safetensors --quiet)
  ropecheck_cli_test(audit_mismatched_shapes_exit_2 2 "x has shape \\[32, 2, 64\\] but y has shape \\[32, 64, 2\\]"
                     audit ${dumps}/xy_mismatch.safetensors --quiet)
  ropecheck_cli_test(audit_fortran_order_exits_2 2 "npy_fortran/y.npy: Fortran order is not supported"
                     audit ${dumps}/npy_fortran --config ${dumps}/config.json --quiet)
  ropecheck_cli_test(audit_contradictory_config_exits_2 2 "theta_contradiction.json: rope_parameters.rope_theta: contradicts"
                     audit ${dumps}/good_f32.safetensors --config ${CMAKE_CURRENT_SOURCE_DIR}/data/configs/broken/theta_contradiction.json --quiet)
  ropecheck_cli_test(audit_fractional_positions_exit_2 2 "positions must be integers" audit ${dumps}/float_positions.safetensors --quiet)
  ropecheck_cli_test(audit_head_dim_mismatch_exits_2 2 "head_dim is 64 but the claimed convention \\(llama3-8b\\) has head_dim 128"
                     audit ${dumps}/good_f32.safetensors --preset llama3-8b --quiet)
  ropecheck_cli_test(audit_missing_dump_exits_2 2 "no such file" audit ${dumps}/nope.safetensors --config ${dumps}/config.json --quiet)
  ropecheck_cli_test(audit_broken_config_exits_2 2 "rope_scaling.factor"
                     audit ${dumps}/good_f32.safetensors --config ${CMAKE_CURRENT_SOURCE_DIR}/data/configs/broken/yarn_missing_factor.json --quiet)
  ropecheck_cli_test(audit_unknown_flag_exits_2 2 "" audit ${dumps}/good_f32.safetensors --no-such-flag)
  ropecheck_cli_test(audit_strict_fails_nothing_on_exact_angles 0 "strict" audit ${dumps}/good_f32.safetensors --strict --quiet)
  include(${CMAKE_CURRENT_SOURCE_DIR}/cli/mrope_cli.cmake)  # M-RoPE dumps (tests/data/dumps/mrope)
  include(${CMAKE_CURRENT_SOURCE_DIR}/cli/explain_cli.cmake)  # ropecheck explain, README's generated tables
  include(${CMAKE_CURRENT_SOURCE_DIR}/certify/certify_cli.cmake)  # certify / merge, exit codes, CI examples
  # --plugin: the property suite against the example kernels (correct fp32 HF; positions in bf16).
  if(TARGET ropecheck_plugin_audit)
    ropecheck_cli_test(audit_plugin_correct_passes 0 "PASS: 7 of 7 properties hold"
                       audit --plugin $<TARGET_FILE:ropecheck_example_plugin> --quiet --junit ${aout}/plugin.xml)
    ropecheck_cli_test(audit_plugin_buggy_fails_with_a_counterexample 1 "FAIL.*shrunk counterexample.*replay: RC_PARAMS="
                       audit --plugin $<TARGET_FILE:ropecheck_example_plugin_buggy> --quiet --json ${aout}/plugin_buggy.json)
    # plugin.h's upgrade trap: a kernel ignoring `inverse` fails as ABI 1; rebuilt with abi = ROPECHECK_PLUGIN_ABI
    # and its limits left zero the property is not asked, and the audit says so loudly (issue 34).
    ropecheck_cli_test(audit_plugin_ignoring_inverse_fails_as_abi_1 1 "inverse_rotation_undoes_rotation +FAIL"
                       audit --plugin $<TARGET_FILE:ropecheck_example_plugin_ignores_inverse> --quiet)
    ropecheck_cli_test(audit_plugin_rebuilt_as_abi_3_warns_of_the_dropped_check 0
                       "WARNING: the plugin declares supports_inverse = 0 and negative_positions = 0, so inverse_rotation_undoes_rotation, which every ABI 1 plugin is held to, is not checked"
                       audit --plugin $<TARGET_FILE:ropecheck_example_plugin_ignores_inverse_rebuilt> --quiet)
    ropecheck_cli_test(audit_plugin_abi_mismatch_exits_2 2 "ABI"
                       audit --plugin $<TARGET_FILE:ropecheck_example_plugin_abi4> --quiet)
    ropecheck_cli_test(audit_plugin_with_convention_flags_exits_2 2 "declares its own convention"
                       audit --plugin $<TARGET_FILE:ropecheck_example_plugin> --base 10000)
  endif()
  include(${CMAKE_CURRENT_SOURCE_DIR}/cli/probe_cli.cmake)  # ropecheck probe, and audit of the outputs of its plan
  include(${CMAKE_CURRENT_SOURCE_DIR}/cli/bias_cli.cmake)  # ropecheck probe on a score-matrix bias family
  include(${CMAKE_CURRENT_SOURCE_DIR}/cli/table_cli.cmake)  # the table door: audit --table, probe --form table, explain
endif()
