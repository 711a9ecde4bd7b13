"""Oracle for parity.MixtureLogE: the Bayes factor of the scale-invariant normal mixture by
numerical integration (scipy), sharing nothing with the Go closed form.

Reads JSON [{"x": [...], "tau": t}, ...] on stdin; writes one log BF per line. For each case

    BF = int N(delta; 0, tau^2) int_0^inf L(x | mu = delta*sigma, sigma) dsigma/sigma ddelta
         / int_0^inf L(x | mu = 0, sigma) dsigma/sigma

with L the normal likelihood. The data are divided by their root mean square first (both
integrals scale by the same factor), so that the integrand's mass sits near sigma = 1.
"""
import json
import math
import sys

import numpy as np
from scipy import integrate

def log_bf(x, tau):
    x = np.asarray(x, dtype=float)
    n = len(x)
    rms = math.sqrt(float(np.mean(x * x)))
    x = x / rms
    # log of the integrand's largest value keeps exp() in range; the same shift divides out.
    def inner(delta):
        f = lambda s: math.exp(-float(np.sum((x - delta * s) ** 2)) / (2 * s * s) - (n + 1) * math.log(s) + shift)
        v, _ = integrate.quad(f, 0, np.inf, limit=400, epsabs=0, epsrel=1e-10)
        return v
    shift = (n + 1) * 0.0 + n / 2.0  # near the maximum over sigma of the null integrand at rms 1
    null = inner(0.0)
    num, _ = integrate.quad(lambda d: inner(d) * math.exp(-d * d / (2 * tau * tau)) / (tau * math.sqrt(2 * math.pi)),
                            -np.inf, np.inf, limit=400, epsabs=0, epsrel=1e-10)
    return math.log(num) - math.log(null)

for case in json.load(sys.stdin):
    print(repr(log_bf(case["x"], case["tau"])))
