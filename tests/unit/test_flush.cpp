// The L2 flush's environment (device.cu: flush_mode): what COURSE_L2_FLUSH and COURSE_L2_FLUSH_BYTE
// select, and that anything else is refused. Host code only; no GPU needed.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "harness/device.h"

namespace {

using course::flush_mode;

TEST(FlushMode, UnsetIsTheCoursesMethod) {
  for (const char* mode : {static_cast<const char*>(nullptr), "", "memset"}) {
    const course::FlushMode m = flush_mode(mode, nullptr);
    EXPECT_FALSE(m.clean);
    EXPECT_EQ(m.fixed_byte, -1);
    EXPECT_EQ(m.method, "memset");
  }
  EXPECT_EQ(flush_mode(nullptr, "").fixed_byte, -1);
}

TEST(FlushMode, CleanAndFixedByte) {
  EXPECT_TRUE(flush_mode("clean", nullptr).clean);
  EXPECT_EQ(flush_mode("clean", nullptr).method, "memset+read");
  const course::FlushMode zero = flush_mode(nullptr, "0");
  EXPECT_EQ(zero.fixed_byte, 0);
  EXPECT_EQ(zero.method, "memset of 0x00");
  const course::FlushMode ff = flush_mode("clean", "255");
  EXPECT_TRUE(ff.clean);
  EXPECT_EQ(ff.fixed_byte, 255);
  EXPECT_EQ(ff.method, "memset+read of 0xff");
}

TEST(FlushMode, RefusesWhatItDoesNotKnow) {
  for (const char* mode : {"Clean", "zero", "memset "}) {
    try {
      flush_mode(mode, nullptr);
      ADD_FAILURE() << "accepted COURSE_L2_FLUSH=" << mode;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("COURSE_L2_FLUSH:"), std::string::npos) << e.what();
    }
  }
  for (const char* byte : {"256", "-1", "0x10", "1.5", "ff", "7 "}) {
    try {
      flush_mode(nullptr, byte);
      ADD_FAILURE() << "accepted COURSE_L2_FLUSH_BYTE=" << byte;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("COURSE_L2_FLUSH_BYTE"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
