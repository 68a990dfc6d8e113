# ropecheck_compile_fail(<name> <source> <expected diagnostic regex>), one per case.
# Conventions as types (src/ropecheck/convention.hpp): each mistake must be refused with its sentence.
ropecheck_compile_fail(mixed_layouts compile_fail/mixed_layouts.cpp
  "a query rotated with the interleaved layout cannot be scored against a key rotated half-split: the pairs differ")
ropecheck_compile_fail(mixed_bases compile_fail/mixed_bases.cpp
  "a query rotated with base 10000 cannot be scored against a key rotated with base 500000: every band but the first turns at another rate")
ropecheck_compile_fail(mixed_scaling_kind compile_fail/mixed_scaling_kind.cpp
  "a query rotated with linear scaling by 4 cannot be scored against a key rotated with ntk scaling by 4: different scaling gives different angles")
ropecheck_compile_fail(mixed_scaling_factor compile_fail/mixed_scaling_factor.cpp
  "a query rotated with linear scaling by 2 cannot be scored against a key rotated with linear scaling by 4: different scaling gives different angles")
ropecheck_compile_fail(cache_reused_after_schedule_change compile_fail/cache_reused_after_schedule_change.cpp
  "a cache of keys rotated with linear scaling by 2 cannot be reused as a cache of keys rotated with linear scaling by 4: different scaling gives different angles")
ropecheck_compile_fail(query_against_stale_cache compile_fail/query_against_stale_cache.cpp
  "a query rotated with base 500000 cannot be scored against a cache of keys rotated with base 10000: every band but the first turns at another rate")
ropecheck_compile_fail(append_key_of_other_convention compile_fail/append_key_of_other_convention.cpp
  "a key rotated half-split cannot be appended to a cache of keys rotated with the interleaved layout: the pairs differ")
ropecheck_compile_fail(position_type_too_narrow compile_fail/position_type_too_narrow.cpp
  "the position type int16_t cannot hold position 131071 of a 131072-token context")
ropecheck_compile_fail(position_type_bfloat16 compile_fail/position_type_bfloat16.cpp
  "the position type bfloat16 cannot hold position 4095 of a 4096-token context")
