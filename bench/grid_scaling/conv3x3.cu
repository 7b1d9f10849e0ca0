// 3x3 convolution of one [h, w] channel, zero padding 1, one thread per output pixel (2D grid).
#define CONV3X3_NAME conv3x3
#define CONV3X3_ROW_IN(rr, h) ((rr) < (h))
#include "../../tests/exec/cuda/conv3x3.cuh"
