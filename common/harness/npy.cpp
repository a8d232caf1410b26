#include "harness/npy.h"

#include <fstream>
#include <stdexcept>

namespace course {

std::string npy_header(const std::string& descr, const std::vector<int64_t>& shape) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) dict += ",";
    if (i + 1 < shape.size()) dict += " ";
  }
  dict += "), }";
  const size_t prefix = 10;                 // magic (6) + version (2) + header length (2)
  size_t total = prefix + dict.size() + 1;  // + '\n'
  size_t pad = (64 - total % 64) % 64;
  dict += std::string(pad, ' ') + "\n";
  std::string h = "\x93NUMPY";
  h += static_cast<char>(1);
  h += static_cast<char>(0);
  uint16_t len = static_cast<uint16_t>(dict.size());
  h += static_cast<char>(len & 0xff);
  h += static_cast<char>(len >> 8);
  return h + dict;
}

void write_npy(const std::string& path, const void* data, const std::string& descr, const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  int item = descr.back() - '0';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot write " + path);
  std::string h = npy_header(descr, shape);
  f.write(h.data(), static_cast<std::streamsize>(h.size()));
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(count * item));
  if (!f) throw std::runtime_error("error writing " + path);
}

void write_npy_dtype(const std::string& path, const void* data, DType t, const std::vector<int64_t>& shape) {
  if (t == DType::f32) return write_npy(path, data, "<f4", shape);
  if (t == DType::f16) return write_npy(path, data, "<f2", shape);
  if (t == DType::u8) return write_npy(path, data, "|u1", shape);
  if (t == DType::i32) return write_npy(path, data, "<i4", shape);  // cross-entropy's targets
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::vector<float> wide(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) wide[i] = static_cast<float>(load_as_double(data, t, i));
  write_npy(path, wide.data(), "<f4", shape);
}

}  // namespace course
