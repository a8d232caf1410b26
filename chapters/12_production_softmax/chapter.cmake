# Racecheck over the production softmax's --quick suite (2986 cases before chapters 13 and 14 took
# the Hopper paths and the backward) ran on the H100 for more than 30 minutes in all. One sanitizer
# test per dtype (--dtype) gives each part its own 30-minute limit.
course_add_chapter(${dir} SANITIZE_BY_DTYPE f32 f16 bf16)
