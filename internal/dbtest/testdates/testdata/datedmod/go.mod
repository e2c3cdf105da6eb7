module example.com/datedmod

go 1.24
