// Helpers for the refusal tests: a call must throw std::invalid_argument whose message
// contains every expected fragment (the function, the argument, the shapes), or error_of gives its whole message
// for a test that pins it exactly.
#pragma once

#include <doctest/doctest.h>

#include <initializer_list>
#include <stdexcept>
#include <string>

template <class Call>
void check_refused(Call&& call, std::initializer_list<std::string> fragments) {
    std::string message;
    bool threw = false;
    try {
        call();
    } catch (const std::invalid_argument& e) {
        threw = true;
        message = e.what();
    }
    REQUIRE_MESSAGE(threw, "expected std::invalid_argument mentioning " << *fragments.begin());
    for (const std::string& f : fragments) CHECK_MESSAGE(message.find(f) != std::string::npos, "message: " << message << "\n  lacks: " << f);
}

// The message of the std::invalid_argument `call` throws, or "(no error)".
template <class Call>
std::string error_of(Call&& call) {
    try {
        call();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "(no error)";
}
