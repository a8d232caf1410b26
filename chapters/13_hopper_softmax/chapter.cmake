# Racecheck of the cluster kernels' largest rows took most of the production softmax's 30-minute
# sanitizer runs on the H100 (chapter 12's chapter.cmake): one sanitizer test per dtype.
course_add_chapter(${dir} SANITIZE_BY_DTYPE f32 f16 bf16)
