// tests/support/pch.cpp — the unit that builds the test suites' precompiled header (tests/CMakeLists.txt,
// ropecheck_test_pch); every test executable reuses it.
