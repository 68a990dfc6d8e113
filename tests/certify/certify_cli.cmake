# tests/certify/certify_cli.cmake — `ropecheck certify` and `merge` end to end: verdicts and exit codes
# (0 pass, 1 fail, 2 bad input), plugins judged like builtins (included from tests/CMakeLists.txt).
set(cdir ${CMAKE_CURRENT_BINARY_DIR}/cli-certify)
file(MAKE_DIRECTORY ${cdir})
ropecheck_cli_test(certify_hf_float_passes 0 "hf_float: PASS.*certificate: .*hf.json \\(pass\\)"
                   certify --preset llama3-8b --impl hf_float --max-position 4095 --quiet --out ${cdir}/hf.json)
ropecheck_cli_test(certify_bf16_positions_fails_exit_1 1 "bf16_positions: FAIL.*\\(fail\\)"
                   certify --preset llama3-8b --impl bf16_positions --max-position 4095 --quiet --out ${cdir}/bf16pos.json)
ropecheck_cli_test(certify_unknown_implementation_exits_2 2 "unknown implementation 'nope'"
                   certify --preset llama3-8b --impl nope --out ${cdir}/x.json)
ropecheck_cli_test(certify_shard_out_of_range_exits_2 2 "--shard: '5/4' is not k/N with 1 <= k <= N"
                   certify --preset llama3-8b --shard 5/4 --out ${cdir}/x.json)
ropecheck_cli_test(certify_shard_not_k_of_n_exits_2 2 "--shard: '2-4' is not k/N"
                   certify --preset llama3-8b --shard 2-4 --out ${cdir}/x.json)
ropecheck_cli_test(certify_max_position_past_int32_exits_2 2 "max-position"
                   certify --preset llama3-8b --max-position 2147483648 --out ${cdir}/x.json)
ropecheck_cli_test(certify_plugin_with_convention_flags_exits_2 2 "the plugin declares its own convention"
                   certify --plugin $<TARGET_FILE:ropecheck_example_plugin> --preset llama3-8b --out ${cdir}/x.json)
# The plugin door gives the builtins' verdicts: a correct fp32 HF kernel passes, the same kernel with
# its positions in bf16 fails (the plugin door's judge names it before the sweep: no certificate).
ropecheck_cli_test(certify_correct_plugin_passes 0 ": PASS.*\\(pass\\)"
                   certify --plugin $<TARGET_FILE:ropecheck_example_plugin> --max-position 4095 --quiet --out ${cdir}/plugin.json)
ropecheck_cli_test(certify_bf16_positions_plugin_fails_exit_1 1 "\\[positions_low_precision\\].*\\(fail"
                   certify --plugin $<TARGET_FILE:ropecheck_example_plugin_buggy> --max-position 4095 --quiet
                   --out ${cdir}/plugin_buggy.json)
# A shard writes a partial and exits 0; merge refuses an incomplete set (exit 2).
ropecheck_cli_test(certify_shard_writes_a_partial 0 "partial certificate 1/2: .*part1.json"
                   certify --preset llama3-8b --impl hf_float --max-position 4095 --shard 1/2 --quiet --out ${cdir}/part1.json)
ropecheck_cli_test(merge_with_a_shard_missing_exits_2 2 "shards 2 of 2 are missing" merge ${cdir}/part1.json --out ${cdir}/m.json)
set_tests_properties(cli.merge_with_a_shard_missing_exits_2 PROPERTIES DEPENDS cli.certify_shard_writes_a_partial)
# The CI examples' own commands (GitHub Actions matrix, Slurm job array) merge to the unsharded file.
add_test(NAME cli.certify_ci_examples_merge_to_the_unsharded_certificate
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/certify/ci_examples_test.sh $<TARGET_FILE:ropecheck> ${PROJECT_SOURCE_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/ci-examples)
set_tests_properties(cli.certify_ci_examples_merge_to_the_unsharded_certificate PROPERTIES LABELS cli TIMEOUT 300)
# The report embeds a certificate of its convention, and refuses one of another.
ropecheck_cli_test(report_embeds_a_certificate 0 "certificate .*hf.json: every position 0..4095, verdict pass"
                   report --preset llama3-8b --no-plots --no-judge --impl hf_float --max-position 4096
                   --certificate ${cdir}/hf.json --out ${cdir}/report-with-certificate)
set_tests_properties(cli.report_embeds_a_certificate PROPERTIES DEPENDS cli.certify_hf_float_passes)
add_test(NAME cli.report_summary_json_has_the_certificate
         COMMAND ${CMAKE_COMMAND} -DFILE=${cdir}/report-with-certificate/summary.json
                 "-DMATCH=\"certificate\": {[^}]*\"verdict\": \"pass\",[^}]*\"max_position\": 4095"
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/file_matches.cmake)
set_tests_properties(cli.report_summary_json_has_the_certificate PROPERTIES LABELS cli DEPENDS cli.report_embeds_a_certificate)
ropecheck_cli_test(report_refuses_a_certificate_of_another_convention_exits_2 2 "certifies another convention"
                   report --preset llama2-7b --no-plots --no-judge --certificate ${cdir}/hf.json --out ${cdir}/x-report)
set_tests_properties(cli.report_refuses_a_certificate_of_another_convention_exits_2 PROPERTIES DEPENDS cli.certify_hf_float_passes)
# certify --plugin judges the kernel as `audit --plugin` does (the probe in prefill and in decode calls,
# every apply() in a child process) before its sweep: no certificate for a kernel the plugin door fails.
# A KV-cache off-by-one (right in prefill, one position ahead in one-token calls), which the sweep's
# blocks of consecutive positions never show:
ropecheck_cli_test(certify_plugin_one_ahead_in_decode_calls_fails_exit_1 1
                   "\\[positions_offset\\] decode calls \\(one token a call\\).*\\(fail: no certificate"
                   certify --plugin $<TARGET_FILE:ropecheck_plugin_bug_decode_one_ahead> --max-position 4095 --quiet
                   --out ${cdir}/plugin_decode_one_ahead.json)
# A kernel that segfaults is a finding (exit 1), never a crash of certify (exit 139 before).
ropecheck_cli_test(certify_plugin_segfault_is_plugin_crashed_exit_1 1 "\\[plugin_crashed\\].*SIGSEGV.*\\(fail: no certificate"
                   certify --plugin $<TARGET_FILE:ropecheck_plugin_fault_segv> --max-position 8191 --quiet
                   --out ${cdir}/plugin_segv.json)
add_test(NAME cli.certify_plugin_segfault_json_names_plugin_crashed
         COMMAND ${CMAKE_COMMAND} -DFILE=${cdir}/plugin_segv.json
                 "-DMATCH=\"bug_class\": \"plugin_crashed\"" -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/file_matches.cmake)
set_tests_properties(cli.certify_plugin_segfault_json_names_plugin_crashed PROPERTIES LABELS cli
                     DEPENDS cli.certify_plugin_segfault_is_plugin_crashed_exit_1)
# `--plugin libk.so` (no slash) is ./libk.so, for audit and certify (dlopen alone would search the
# library path); a missing one is named as the path tried.
foreach(door audit certify)
  set(bare_args --plugin $<TARGET_FILE_NAME:ropecheck_plugin_hf_f32> --quiet)
  if(door STREQUAL "certify")
    list(APPEND bare_args --max-position 4095 --out ${cdir}/bare_name.json)
  else()
    list(APPEND bare_args --max-success 5)
  endif()
  add_test(NAME cli.${door}_plugin_bare_name_loads_from_the_working_directory
           COMMAND ${CMAKE_COMMAND} -DEXPECT=0 "-DMATCH=PASS" -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_exit.cmake
                   -- $<TARGET_FILE:ropecheck> ${door} ${bare_args}
           WORKING_DIRECTORY $<TARGET_FILE_DIR:ropecheck_plugin_hf_f32>)
  set_tests_properties(cli.${door}_plugin_bare_name_loads_from_the_working_directory PROPERTIES LABELS cli TIMEOUT 300)
endforeach()
add_test(NAME cli.audit_plugin_bare_name_missing_names_the_path_tried
         COMMAND ${CMAKE_COMMAND} -DEXPECT=2 "-DMATCH=\\./no_such_plugin\\.so" -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_exit.cmake
                 -- $<TARGET_FILE:ropecheck> audit --plugin no_such_plugin.so --quiet
         WORKING_DIRECTORY $<TARGET_FILE_DIR:ropecheck_plugin_hf_f32>)
set_tests_properties(cli.audit_plugin_bare_name_missing_names_the_path_tried PROPERTIES LABELS cli)
