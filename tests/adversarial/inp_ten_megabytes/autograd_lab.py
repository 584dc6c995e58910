# placeholder: the test generates the real 10 MB file (generate: ten_megabytes)
