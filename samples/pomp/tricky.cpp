// tricky.cpp - C++ for expert-instrument's tests: raw strings and lambdas that contain directive-like
// text, templates, digit separators, try/catch inside a parallel region.  Deterministic output.
#include <omp.h>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

static const std::string raw = R"doc(
#pragma omp parallel
{ "unbalanced ( braces in a raw string
)doc";
static const char quote = '"';          // a character literal that looks like a string start

template <typename T>
T sum_parallel(const std::vector<T> &v)
{
    T total = 0;
#pragma omp parallel for reduction(+ : total) num_threads(2) schedule(dynamic, 7)
    for (std::size_t i = 0; i < v.size(); ++i) total += v[i];
    return total;
}

struct Counter {
    long hits = 0;
    void hit() {
#pragma omp critical(counter)
        ++hits;
    }
};

int main()
{
    std::vector<long> v(1'000);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<long>(i);
    Counter c;
    int errors = 0;
#pragma omp parallel num_threads(3) reduction(+ : errors)
    {
        auto work = [&](int k) { for (int j = 0; j < k; ++j) c.hit(); };   // { braces ; inside a lambda }
        try {
            work(5);
            if (omp_get_thread_num() == 1) throw std::runtime_error("#pragma omp barrier");
        } catch (const std::exception &e) {
            errors += 1;
        }
#pragma omp for
        for (int i = 0; i < 6; i++)
            work(1);
    }
    std::printf("%zu %c %ld %ld %d\n", raw.size(), quote, sum_parallel(v), c.hits, errors);
    return 0;
}
