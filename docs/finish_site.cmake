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

# The lessons link their kernel files by name ([copy.cu](copy.cu)), which works on GitHub; in the
# site the same link goes to Doxygen's page of that source file (copy.cu -> copy_8cu_source.html).
foreach(page ${pages})
  file(READ ${page} text)
  string(REGEX MATCHALL "href=\"[a-z0-9_]+\\.(cu|cuh|h|cpp)\"" refs "${text}")
  list(REMOVE_DUPLICATES refs)
  set(changed FALSE)
  foreach(ref ${refs})
    string(REGEX REPLACE "href=\"(.*)\"" "\\1" name "${ref}")
    string(REPLACE "_" "__" escaped "${name}")
    string(REPLACE "." "_8" escaped "${escaped}")
    if(EXISTS ${SITE}/${escaped}_source.html)
      string(REPLACE "${ref}" "href=\"${escaped}_source.html\"" text "${text}")
      set(changed TRUE)
    endif()
  endforeach()
  if(changed)
    file(WRITE ${page} "${text}")
  endif()
endforeach()
