# Chapter 12's --quick suite (about 3000 cases, the cluster kernels' rows among them) takes
# racecheck and initcheck past one test's 30 minutes on the H100: one sanitizer test per dtype.
course_add_chapter(${dir} SANITIZE_BY_DTYPE f32 f16 bf16)
