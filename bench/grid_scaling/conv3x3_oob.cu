// conv3x3.cu with the lower-row halo test off by one (`rr <= h`): the last row reads one row past x.
#define CONV3X3_NAME conv3x3
#define CONV3X3_ROW_IN(rr, h) ((rr) <= (h))
#include "../../tests/exec/cuda/conv3x3.cuh"
