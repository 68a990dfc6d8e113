// tests/support/scratch_dir.hpp — a fresh directory for one test, removed with it:
// <temp>/<prefix>_<pid>_<test name> (the pid and the name keep parallel ctest processes apart). Held as a
// fixture member, it is made before SetUp and removed after TearDown.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <unistd.h>

namespace ropecheck::test {

class scratch_dir {
 public:
  explicit scratch_dir(const std::string& prefix)
      : path_(std::filesystem::temp_directory_path() /
              (prefix + "_" + std::to_string(::getpid()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~scratch_dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  operator const std::filesystem::path&() const noexcept { return path_; }  // NOLINT: used where a path is
  friend std::filesystem::path operator/(const scratch_dir& d, const std::filesystem::path& p) { return d.path_ / p; }

 private:
  std::filesystem::path path_;
};

}  // namespace ropecheck::test
