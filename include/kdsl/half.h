// half.h - the public spelling of kdsl's f16 / bf16 storage types and converters (they live in formats/half.h)
#pragma once
#include <kdsl/formats/half.h>
