// All of hybla's file I/O: Matrix Market, edge lists, mcl --abc labels, the binary format, and read_graph.
#pragma once
#include "io/abc.hpp"
#include "io/binary.hpp"
#include "io/edge_list.hpp"
#include "io/graph.hpp"
#include "io/matrix_market.hpp"
#include "io/read_graph.hpp"
#include "io/value_type.hpp"
