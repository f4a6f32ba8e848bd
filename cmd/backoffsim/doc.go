package main

import "io"

func writeDoc(w io.Writer, o *options, stderr io.Writer) error { return nil }
