// Package input reads what the fleetgraph command is given to read (RGD
// files, directories of them, CRD files, standard input) as a program
// that may be handed anything must: within a size bound per file and for
// standard input, from regular files only (never a device, a FIFO or a
// socket, which are not even opened), and without following a symbolic
// link out of the directory tree given unless asked. Everything it
// refuses is an error that says which file and why, in one line, so that
// a hostile or mistaken input ends the command early instead of taking
// all its memory or time.
package input
