# Run after Doxygen (cmake -P): copies the reference GPU's figures into the site and points the
# lessons' image links (written relative to the repository, for GitHub) at the copies, so that
# docs/html/ is self-contained and can be published anywhere.
#   -DSITE=<docs/html> -DFIGURES=<plots/figures/<gpu>> -DGPU=<gpu slug>
file(MAKE_DIRECTORY ${SITE}/figures)
file(GLOB figs ${FIGURES}/*.png ${FIGURES}/*.svg)
if(figs)
  file(COPY ${figs} DESTINATION ${SITE}/figures)
endif()
file(GLOB pages ${SITE}/*.html)
foreach(page ${pages})
  file(READ ${page} text)
  string(REGEX REPLACE "src=\"(\\.\\./)*plots/figures/${GPU}/" "src=\"figures/" new "${text}")
  if(NOT new STREQUAL text)
    file(WRITE ${page} "${new}")
  endif()
endforeach()
