module racy

go 1.26
