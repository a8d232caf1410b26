#include "harness/cli.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "harness/errors.h"

namespace course {

int64_t parse_int(const std::string& flag, const std::string& value) {
  require(!value.empty(), flag, " needs a value");
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(value.c_str(), &end, 10);
  require(errno == 0 && end && *end == '\0', flag, " expects an integer, got '", value, "'");
  return v;
}

Options parse_args(int argc, const char* const* argv) {
  Options o;
  bool verify = false, list = false, info = false, help = false, input_fill = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--benchmark_", 0) == 0) {
      o.benchmark_args.push_back(a);
      continue;
    }
    std::string flag = a, value;
    bool has_inline = false;
    if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      flag = a.substr(0, eq);
      value = a.substr(eq + 1);
      has_inline = true;
    }
    auto take_value = [&]() -> std::string {
      if (has_inline) return value;
      require(i + 1 < argc, flag, " needs a value");
      return argv[++i];
    };
    auto no_value = [&]() { require(!has_inline, flag, " takes no value"); };
    if (flag == "--verify") {
      no_value();
      verify = true;
    } else if (flag == "--list") {
      no_value();
      list = true;
    } else if (flag == "--quick") {
      no_value();
      o.quick = true;
    } else if (flag == "--large") {
      no_value();
      o.large = true;
    } else if (flag == "--device-info") {
      no_value();
      info = true;
    } else if (flag == "--help" || flag == "-h") {
      help = true;
    } else if (flag == "--rows") {
      o.rows = parse_int(flag, take_value());
      require(*o.rows >= 0, "--rows must be >= 0, got ", *o.rows);
    } else if (flag == "--cols") {
      o.cols = parse_int(flag, take_value());
      require(*o.cols >= 1, "--cols must be >= 1, got ", *o.cols);
    } else if (flag == "--sweep") {
      std::string v = take_value();
      require(v == "standard" || v == "shapes", "--sweep must be standard or shapes, got '", v, "'");
      o.shapes = v == "shapes";
    } else if (flag == "--max-cols") {
      o.max_cols = parse_int(flag, take_value());
      require(*o.max_cols >= 1, "--max-cols must be >= 1, got ", *o.max_cols);
    } else if (flag == "--dtype") {
      std::string v = take_value();
      DType t = DType::f32;  // set by parse_dtype when it returns true
      require(parse_dtype(v, &t), "--dtype must be f32, f16 or bf16, got '", v, "'");
      o.dtype = t;
    } else if (flag == "--seed") {
      int64_t s = parse_int(flag, take_value());
      require(s >= 0, "--seed must be >= 0, got ", s);
      o.seed = static_cast<uint64_t>(s);
    } else if (flag == "--offset") {
      o.offset = parse_int(flag, take_value());
      require(o.offset >= 0 && o.offset <= (1 << 20), "--offset must be in [0, 1048576], got ", o.offset);
    } else if (flag == "--save") {
      o.save_dir = take_value();
      require(!o.save_dir.empty(), "--save needs a directory");
    } else if (flag == "--input-fill") {
      std::string v = take_value();
      require(v == "normal" || v == "outliers", "--input-fill must be normal or outliers, got '", v, "'");
      o.outliers = v == "outliers";
      input_fill = true;
    } else if (flag == "--kernel") {
      o.kernel = take_value();
    } else {
      throw UsageError("unknown argument '" + a + "'");
    }
  }
  int modes = verify + list + info + help;
  require(modes <= 1, "--verify, --list, --device-info and --help exclude each other");
  if (help)
    o.mode = Mode::help;
  else if (list)
    o.mode = Mode::list;
  else if (info)
    o.mode = Mode::device_info;
  else if (verify)
    o.mode = Mode::verify;

  require(o.rows.has_value() == o.cols.has_value(), "--rows and --cols go together");
  if (o.mode == Mode::verify) {
    require(!o.large || !o.rows, "--large runs the suite's large cases; it takes no --rows/--cols");
    require(!o.max_cols || !o.rows, "--max-cols selects the suite's cases; it takes no --rows/--cols");
    require(o.rows || (o.offset == 0 && o.save_dir.empty()),
            "--offset and --save with --verify need --rows and --cols (one case)");
  } else {
    require(o.save_dir.empty(), "--save needs --verify --rows R --cols C");
    require(!o.large, "--large needs --verify");
    require(!o.max_cols, "--max-cols needs --verify");
    require(o.offset == 0 || o.mode == Mode::bench, "--offset needs --verify or a benchmark");
  }
  require(!o.shapes || o.mode == Mode::bench || o.mode == Mode::list, "--sweep only applies to the benchmarks (and --list)");
  require(!o.shapes || (!o.quick && !o.rows), "--sweep shapes excludes --quick and --rows/--cols");
  if (o.mode != Mode::bench) require(o.benchmark_args.empty(), "--benchmark_* flags only apply to the benchmark sweep");
  require(!input_fill || o.mode == Mode::bench, "--input-fill only applies to the benchmark sweep (the suite has its own fills)");
  return o;
}

std::string usage(const std::string& program) {
  std::ostringstream s;
  s << "usage:\n"
    << "  " << program << " [--quick | --sweep standard|shapes] [--kernel K] [--rows R --cols C] [--dtype T]\n"
    << "      " << std::string(program.size(), ' ') << " [--benchmark_...]\n"
    << "      " << std::string(program.size(), ' ') << " [--input-fill normal|outliers]\n"
    << "      run the benchmark sweep (rows 49152, cols 32..32768, f32/f16/bf16), or one shape;\n"
    << "      --sweep shapes: odd widths, vocabulary rows, few long rows, shapes past 2^31 elements\n"
    << "      (row-wise chapters); --kernel A,B selects the variants matching A or B\n"
    << "      inputs hold normal(0, 1) values, or with 'outliers' x has 1 value in 61 scaled by 20\n"
    << "  " << program << " --verify [--kernel K] [--dtype T] [--quick | --large] [--max-cols N]\n"
    << "      run the correctness suite (exit 1 on any failure), or the part of it for K and T;\n"
    << "      --max-cols N reports the cases of more than N columns SKIPPED without running them\n"
    << "  " << program << " --verify --rows R --cols C [--dtype f32|f16|bf16] [--seed S]\n"
    << "      " << std::string(program.size(), ' ') << " [--offset E] [--save DIR] [--kernel K]\n"
    << "      check one case; --offset starts input and output E elements into their buffers,\n"
    << "      --save writes the input, output and reference as .npy files into DIR\n"
    << "  " << program << " --list           the variants and their limits\n"
    << "  " << program << " --device-info    the GPU this would run on (exit 77 if none)\n"
    << "Exit codes: 0 ok, 1 verification failed, 2 bad arguments, 77 no GPU (skipped).\n";
  return s.str();
}

}  // namespace course
