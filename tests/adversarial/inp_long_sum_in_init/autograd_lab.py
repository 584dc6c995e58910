# placeholder: the test generates the real file (generate: long_sum_in_init)
