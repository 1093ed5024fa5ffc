"""expert_opari: OPARI-style source instrumentation of OpenMP programs with POMP calls.

Modules, each importing only the ones above it:
  directives    directive names and clauses, Table 1/2 construct splitting (shared by C and Fortran)
  descriptors   POMP context descriptors: C static descriptors, Fortran handles and their C table
  c_lexer       C/C++ tokenizer and statement scanner
  c_rewriter    C/C++ rewriting (instrument_source)
  fortran       free- and fixed-form Fortran reading and rewriting (instrument_fortran)
  cli           expert-instrument (instrument_file, main)
  cc            expert-cc (instrument, compile and link)
runtime/bin/expert-instrument and expert-cc start cli.main and cc.main through ../launch.py.
"""
