# autograd lab
# TODO: write the Value class

   
	
# (nothing yet)
