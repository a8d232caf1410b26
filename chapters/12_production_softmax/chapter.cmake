# Racecheck over chapter 12's --quick suite (2986 cases) ran on the H100 in pieces, beside the
# other sanitizers, for more than 30 minutes in all, most of it on the cluster kernels' largest
# rows. One sanitizer test per dtype (--dtype) gives each part its own 30-minute limit.
course_add_chapter(${dir} SANITIZE_BY_DTYPE f32 f16 bf16)
