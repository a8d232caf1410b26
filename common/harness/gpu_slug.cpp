#include <cctype>
#include <cstdio>
#include <string>

#include "harness/device.h"

namespace course {

std::string gpu_slug(const std::string& name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* drop : {"nvidia ", "geforce ", "tesla "}) {
    size_t pos;
    while ((pos = lower.find(drop)) != std::string::npos) lower.erase(pos, std::string(drop).size());
  }
  std::string slug;
  for (char c : lower) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      slug += c;
    else if (!slug.empty() && slug.back() != '-')
      slug += '-';
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return slug.empty() ? "unknown-gpu" : slug;
}

std::string gpu_uuid_text(const unsigned char bytes[16]) {
  std::string text = "GPU-";
  for (int i = 0; i < 16; ++i) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned>(bytes[i]));
    text += hex;
    if (i == 3 || i == 5 || i == 7 || i == 9) text += '-';
  }
  return text;
}

}  // namespace course
