// The shared command line: every chapter parses the same flags the same way.
#include <gtest/gtest.h>

#include <vector>

#include "harness/cli.h"
#include "harness/errors.h"

using course::Mode;
using course::Options;
using course::UsageError;

namespace {
Options parse(std::vector<const char*> args) {
  args.insert(args.begin(), "chXX");
  return course::parse_args(static_cast<int>(args.size()), args.data());
}
}  // namespace

TEST(Cli, NoFlagsIsTheBenchmarkSweep) {
  Options o = parse({});
  EXPECT_EQ(o.mode, Mode::bench);
  EXPECT_FALSE(o.quick);
}

TEST(Cli, VerifySuiteAndSingleCase) {
  EXPECT_EQ(parse({"--verify"}).mode, Mode::verify);
  EXPECT_FALSE(parse({"--verify"}).single_case());
  Options o = parse({"--verify", "--rows", "3", "--cols=1025", "--dtype", "bf16", "--seed", "9", "--offset", "1"});
  EXPECT_TRUE(o.single_case());
  EXPECT_EQ(*o.rows, 3);
  EXPECT_EQ(*o.cols, 1025);
  EXPECT_EQ(*o.dtype, course::DType::bf16);
  EXPECT_EQ(o.seed, 9u);
  EXPECT_EQ(o.offset, 1);
  // --dtype alone selects that type's part of the suite (the sanitizer tests' split).
  Options part = parse({"--verify", "--quick", "--dtype", "f16"});
  EXPECT_FALSE(part.single_case());
  EXPECT_TRUE(part.quick);
  EXPECT_EQ(*part.dtype, course::DType::f16);
}

TEST(Cli, BenchmarkFlagsPassThrough) {
  Options o = parse({"--quick", "--benchmark_filter=f16", "--benchmark_out=x.json"});
  EXPECT_TRUE(o.quick);
  ASSERT_EQ(o.benchmark_args.size(), 2u);
  EXPECT_EQ(o.benchmark_args[1], "--benchmark_out=x.json");
}

TEST(Cli, InputFillChoosesTheBenchmarkValues) {
  EXPECT_FALSE(parse({}).outliers);  // plain normal values by default
  EXPECT_FALSE(parse({"--input-fill", "normal"}).outliers);
  EXPECT_TRUE(parse({"--input-fill=outliers", "--rows", "4", "--cols", "8"}).outliers);
  EXPECT_THROW(parse({"--input-fill", "uniform"}), UsageError);
  EXPECT_THROW(parse({"--input-fill"}), UsageError);                         // missing value
  EXPECT_THROW(parse({"--verify", "--input-fill", "outliers"}), UsageError);  // the suite has its own fills
}

TEST(Cli, MaxColsNarrowsTheSuiteOnly) {
  EXPECT_FALSE(parse({"--verify", "--quick"}).max_cols.has_value());
  EXPECT_EQ(*parse({"--verify", "--quick", "--max-cols", "131072"}).max_cols, 131072);
  EXPECT_EQ(*parse({"--verify", "--max-cols=8"}).max_cols, 8);
  EXPECT_THROW(parse({"--verify", "--max-cols", "0"}), UsageError);
  EXPECT_THROW(parse({"--verify", "--max-cols", "-1"}), UsageError);
  EXPECT_THROW(parse({"--verify", "--max-cols"}), UsageError);                                 // missing value
  EXPECT_THROW(parse({"--max-cols", "8"}), UsageError);                                        // a benchmark flag it is not
  EXPECT_THROW(parse({"--verify", "--rows", "1", "--cols", "9", "--max-cols", "8"}), UsageError);  // one case
}

TEST(Cli, SweepShapesIsForTheBenchmarks) {
  EXPECT_FALSE(parse({}).shapes);
  EXPECT_FALSE(parse({"--sweep", "standard"}).shapes);
  EXPECT_TRUE(parse({"--sweep=shapes", "--kernel", "/production/"}).shapes);
  EXPECT_TRUE(parse({"--list", "--sweep", "shapes"}).shapes);
  EXPECT_THROW(parse({"--sweep", "odd"}), UsageError);
  EXPECT_THROW(parse({"--sweep"}), UsageError);                                   // missing value
  EXPECT_THROW(parse({"--sweep", "shapes", "--quick"}), UsageError);              // one or the other
  EXPECT_THROW(parse({"--sweep", "shapes", "--rows", "4", "--cols", "8"}), UsageError);
  EXPECT_THROW(parse({"--verify", "--sweep", "shapes"}), UsageError);             // the suite has its own shapes
}

TEST(Cli, RowsZeroIsAllowedColsZeroIsNot) {
  EXPECT_EQ(*parse({"--verify", "--rows", "0", "--cols", "5"}).rows, 0);
  EXPECT_THROW(parse({"--verify", "--rows", "1", "--cols", "0"}), UsageError);
  EXPECT_THROW(parse({"--verify", "--rows", "-3", "--cols", "5"}), UsageError);
}

TEST(Cli, BadInputIsAUsageError) {
  EXPECT_THROW(parse({"--bogus"}), UsageError);
  EXPECT_THROW(parse({"--rows", "12x", "--cols", "3"}), UsageError);
  EXPECT_THROW(parse({"--rows", "99999999999999999999", "--cols", "3"}), UsageError);
  EXPECT_THROW(parse({"--verify", "--rows"}), UsageError);       // missing value
  EXPECT_THROW(parse({"--verify", "--rows", "3"}), UsageError);  // rows without cols
  EXPECT_THROW(parse({"--dtype", "f64"}), UsageError);
  EXPECT_THROW(parse({"--verify", "--list"}), UsageError);         // two modes
  EXPECT_THROW(parse({"--save", "out"}), UsageError);              // save needs a case
  EXPECT_THROW(parse({"--verify", "--offset", "3"}), UsageError);  // offset needs a case
  EXPECT_THROW(parse({"--verify", "--benchmark_filter=x"}), UsageError);
  EXPECT_THROW(parse({"--verify=yes"}), UsageError);
  EXPECT_THROW(parse({"--offset", "-1"}), UsageError);
}

TEST(Cli, ErrorsNameTheArgument) {
  try {
    parse({"--dtype", "f64"});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("f64"), std::string::npos);
  }
  try {
    parse({"--verify", "--rows", "1", "--cols", "-7"});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("-7"), std::string::npos);
  }
}

TEST(Cli, UsageMentionsEveryFlag) {
  std::string u = course::usage("chXX");
  for (const char* f : {"--verify", "--rows", "--cols", "--dtype", "--seed", "--offset", "--save", "--list", "--quick",
                        "--kernel", "--large", "--input-fill"})
    EXPECT_NE(u.find(f), std::string::npos) << f;
}
