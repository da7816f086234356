// EXPECT_THROW_EXACTLY(statement, Type): the statement raises an error of
// exactly `Type`, not a subclass of it and not a base.
//
// GoogleTest's EXPECT_THROW(statement, Type) passes for any subclass of Type:
// EXPECT_THROW(..., RuntimeError) accepts a NotImplementedError, and
// EXPECT_THROW(..., NotImplementedError) an UnsupportedOperationPlan. Where a
// specification or a header names the error type, a test checks exactly that
// type with this macro, so that a wrong type hidden behind a base-class catch
// fails. The comparison is by typeid of the thrown object (its most-derived
// type); the failure message gives the thrown type_name() and what().
//
// EXPECT_THROW_EXACTLY_WITH_MESSAGE(statement, Type, message) also requires
// what() to equal `message` (a std::string or a string literal).
//
// EXPECT_ERROR_TYPE_IS(error, Type), inside a catch block that examines the
// error's fields: the caught object is of exactly `Type`.
//
// EXACT_ERROR_MESSAGE(statement, Type) is the what() of the exactly-`Type`
// error the statement raises, for checks on parts of a message; it records a
// failure (at the caller's line) and returns "" when the statement raises
// nothing or another type.
#pragma once

#include <strideweave/errors.h>

#include <gtest/gtest.h>

#include <exception>
#include <string>
#include <type_traits>
#include <typeinfo>

namespace sw_testing {

template <class Expected, class Statement>
::testing::AssertionResult throws_exactly(Statement&& statement, const char* statement_text, const char* type_text,
                                          const char* message = nullptr) {
  // `message` is a C string rather than std::optional<std::string>: GCC 12
  // at -O3 reports the optional's string as maybe-uninitialized (-Werror).
  static_assert(std::is_base_of_v<strideweave::Error, Expected>, "EXPECT_THROW_EXACTLY names a strideweave error type");
  try {
    statement();
  } catch (const strideweave::Error& e) {
    if (typeid(e) != typeid(Expected))
      return ::testing::AssertionFailure() << statement_text << " raised " << e.type_name() << " (\"" << e.what()
                                           << "\"); expected exactly " << type_text;
    if (message && std::string(message) != e.what())
      return ::testing::AssertionFailure() << statement_text << " raised " << type_text << " with message\n  \""
                                           << e.what() << "\"\nexpected\n  \"" << message << "\"";
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << statement_text << " raised a non-strideweave exception (\"" << e.what()
                                         << "\"); expected exactly " << type_text;
  } catch (...) {
    return ::testing::AssertionFailure() << statement_text << " raised a non-exception object; expected exactly "
                                         << type_text;
  }
  return ::testing::AssertionFailure() << statement_text << " raised nothing; expected exactly " << type_text;
}

template <class Expected, class Statement>
std::string exact_error_message(Statement&& statement, const char* statement_text, const char* type_text,
                                const char* file, int line) {
  std::string message;
  const ::testing::AssertionResult r = throws_exactly<Expected>(
      [&] {
        try {
          statement();
        } catch (const strideweave::Error& e) {
          message = e.what();
          throw;
        }
      },
      statement_text, type_text);
  if (!r) {
    ADD_FAILURE_AT(file, line) << r.message();
    return "";
  }
  return message;
}

}  // namespace sw_testing

#define EXPECT_THROW_EXACTLY(statement, Type) \
  EXPECT_TRUE(::sw_testing::throws_exactly<Type>([&] { statement; }, #statement, #Type))
#define ASSERT_THROW_EXACTLY(statement, Type) \
  ASSERT_TRUE(::sw_testing::throws_exactly<Type>([&] { statement; }, #statement, #Type))
#define EXPECT_THROW_EXACTLY_WITH_MESSAGE(statement, Type, message) \
  EXPECT_TRUE(::sw_testing::throws_exactly<Type>([&] { statement; }, #statement, #Type, std::string(message).c_str()))
#define EXACT_ERROR_MESSAGE(statement, Type) \
  ::sw_testing::exact_error_message<Type>([&] { statement; }, #statement, #Type, __FILE__, __LINE__)
#define EXPECT_ERROR_TYPE_IS(error, Type)                                                      \
  EXPECT_TRUE(typeid(error) == typeid(Type)) << "caught " << (error).type_name() << " (\"" << (error).what() \
                                             << "\"); expected exactly " #Type
