# kiln_tokenizer_tests: the tokenizer (runtime/src/generate/tokenizer*.cpp) against the reference ids in
# test/models/tokenizers. The tokenizer.json files are checked in as one xz-compressed tar and
# unpacked into the build tree (cmake -E tar reads xz; no extra library is needed).
set(KILN_TOKENIZER_DATA ${PROJECT_SOURCE_DIR}/test/models/tokenizers)
set(KILN_TOKENIZER_UNPACKED ${CMAKE_CURRENT_BINARY_DIR}/tokenizers)
set(KILN_TOKENIZER_FILES
  ${KILN_TOKENIZER_UNPACKED}/gpt2.json
  ${KILN_TOKENIZER_UNPACKED}/llama3.json
  ${KILN_TOKENIZER_UNPACKED}/qwen3.json)
add_custom_command(
  OUTPUT ${KILN_TOKENIZER_FILES}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${KILN_TOKENIZER_UNPACKED}
  COMMAND ${CMAKE_COMMAND} -E chdir ${KILN_TOKENIZER_UNPACKED}
          ${CMAKE_COMMAND} -E tar xf ${KILN_TOKENIZER_DATA}/tokenizers.tar.xz
  # The archive stores mtime 0; touch so the outputs are newer than the archive.
  COMMAND ${CMAKE_COMMAND} -E touch ${KILN_TOKENIZER_FILES}
  DEPENDS ${KILN_TOKENIZER_DATA}/tokenizers.tar.xz
  COMMENT "Unpacking test/models/tokenizers/tokenizers.tar.xz"
  VERBATIM)
add_custom_target(kiln_tokenizer_test_data DEPENDS ${KILN_TOKENIZER_FILES})

find_package(nlohmann_json 3.2 REQUIRED) # the test reads the reference JSON with it
add_executable(kiln_tokenizer_tests tokenizer_test.cpp)
target_link_libraries(kiln_tokenizer_tests PRIVATE
  kiln_runtime_internal nlohmann_json::nlohmann_json GTest::gtest GTest::gtest_main)
target_compile_definitions(kiln_tokenizer_tests PRIVATE
  KILN_TOKENIZER_DATA="${KILN_TOKENIZER_DATA}"
  KILN_TOKENIZER_UNPACKED="${KILN_TOKENIZER_UNPACKED}"
  # Llama 2 / Gemma 3 files and expected ids, written at setup time (scripts/setup_tokenizer_refs.sh).
  KILN_TOKENIZER_REFS="${PROJECT_BINARY_DIR}/tokenizer-refs")
add_dependencies(kiln_tokenizer_tests kiln_tokenizer_test_data)
gtest_discover_tests(kiln_tokenizer_tests DISCOVERY_TIMEOUT 60)
