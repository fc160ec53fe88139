# Third-party packages every build needs (OverlapPackages.cmake), and GoogleTest for the tests.
include(${CMAKE_CURRENT_LIST_DIR}/OverlapPackages.cmake)

if(OVERLAP_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
