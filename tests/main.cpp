// main.cpp - the doctest runner for every kdsl suite
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
