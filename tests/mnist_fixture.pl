#!/usr/bin/env perl
# tests/mnist_fixture.pl DIR TRAIN TEST — writes a small stand-in for MNIST in DIR: the four IDX files
# (uncompressed, nn/idx.h) with TRAIN and TEST images of 28x28, so the program-level tests need no download.
# Image i has label (i * 7) mod 10; its picture is dim noise with a brighter 5x5 square at a place that depends
# on the label (a 5 x 2 grid of places), plus a random offset of up to 2 pixels: easy, but not trivial.
# Deterministic (a fixed linear congruential generator): the same files every time.
use strict;
use warnings;

my ($dir, $ntrain, $ntest) = @ARGV;
die "usage: $0 DIR TRAIN TEST\n" unless defined $ntest;
my $state = 12345;
sub next_random {  # 0 .. 2^31-1
  $state = (1103515245 * $state + 12345) % 2147483648;
  return $state;
}

sub write_split {
  my ($images_path, $labels_path, $n) = @_;
  open(my $img, '>:raw', $images_path) or die "$images_path: $!\n";
  open(my $lab, '>:raw', $labels_path) or die "$labels_path: $!\n";
  print $img pack('N4', 0x00000803, $n, 28, 28);
  print $lab pack('N2', 0x00000801, $n);
  for my $i (0 .. $n - 1) {
    my $label = ($i * 7) % 10;
    my $x0 = 1 + ($label % 5) * 5 + next_random() % 3;
    my $y0 = 3 + int($label / 5) * 12 + next_random() % 3;
    my @pixels;
    for my $y (0 .. 27) {
      for my $x (0 .. 27) {
        my $inside = $x >= $x0 && $x < $x0 + 5 && $y >= $y0 && $y < $y0 + 5;
        push @pixels, $inside ? 70 + next_random() % 120 : next_random() % 110;
      }
    }
    print $img pack('C*', @pixels);
    print $lab pack('C', $label);
  }
  close($img) or die;
  close($lab) or die;
}

mkdir $dir unless -d $dir;
write_split("$dir/train-images-idx3-ubyte", "$dir/train-labels-idx1-ubyte", $ntrain);
write_split("$dir/t10k-images-idx3-ubyte", "$dir/t10k-labels-idx1-ubyte", $ntest);
